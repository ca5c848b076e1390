"""Command handlers: one argparse namespace in, library calls out, text on stdout. Only cli.py
imports these; the library below never sees a namespace."""
