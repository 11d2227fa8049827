"""Domain packs: an enterprise's domain as data (docs/packs.md).

``hopweave.pack.loader.load_pack(PACK, STORE)`` loads one, ``hopweave.pack.validate.validate_pack``
checks one without writing, ``hopweave.pack.init.init_pack(DIR)`` writes a starter pack.
"""
