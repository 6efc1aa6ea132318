import pathlib

FLASHINFER_CSRC_DIR = pathlib.Path(__file__).parent / "csrc"
