"""The plan: a spec checked and sized before Ray starts (`make`; `validate`, the API's, for a
spec given from Python and the machine named), its types (`types`, a leaf), the checks of each
experiment (`checks`) and its words in `validate` (`describe`)."""
