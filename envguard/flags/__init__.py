"""Server flags read exactly as SGLang and vLLM read them: catalogs extracted from their real
argument parsers (tools/extract_catalog.py), rebuilt here as argparse parsers."""
