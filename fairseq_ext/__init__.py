"""Library half of the plugin: importable without registering anything in fairseq."""
