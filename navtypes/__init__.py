"""The vocabulary the repo-map engine and the navigator share: the flight plan, map metadata, errors.

A tiny package that imports nothing of the project (pydantic and the standard
library only), so ``repomap`` (the engine) and ``navcore`` (the shared model
package) can both use these types without depending on each other.
"""
