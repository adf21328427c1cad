"""How the app is invoked in the commands it prints: every printed command runs as printed when
pasted into a shell with the app's environment active (`tune_app` alone is no executable; the
`tune-app` script may not be on PATH in a notebook's kernel, `python -m` always is)."""

APP = "python -m tune_app"
