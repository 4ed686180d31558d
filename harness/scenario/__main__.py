"""`python -m harness.scenario` rewrites the shipped JSON schema from the models."""

from ._schema import main

raise SystemExit(main())
