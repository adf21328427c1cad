"""The plan: a spec checked and sized before Ray starts (`make`), its types (`types`, a leaf),
the checks of each experiment (`checks`) and its words in `validate` (`describe`)."""
