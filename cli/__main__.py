"""`python -m savedmodel.cli`: the `savedmodel` command, for environments without its script."""
from savedmodel.cli import main

main()
