"""`python -m tune_app.rllib`: refresh the snapshot of accepted keys after an RLlib upgrade."""

from tune_app.rllib.keys import KEYS_FILE
from tune_app.rllib.snapshot import write_keys_snapshot

if __name__ == "__main__":
    write_keys_snapshot()
    print(f"wrote {KEYS_FILE}")
