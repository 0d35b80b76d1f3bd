"""Hold the write lock of the directory ``argv[1]`` (:func:`cgra.outputs.claim_output_dir`)
until stdin is closed: the other writer of the bad-input lock tests (bad_support.Holder)."""
import sys

from cgra.outputs import claim_output_dir

if __name__ == "__main__":
    with claim_output_dir(sys.argv[1], "RUN_DIR"):
        print("locked", flush=True)
        sys.stdin.read()
