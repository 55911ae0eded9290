"""One process of a distributed evaluation: run by tests/state/test_distributed.py.

    python distributed_worker.py MODULE_DIR PROCESS_ID NUM_PROCESS EXPERIMENT_ID INPUTS_JSON OUTPUT_JSON
Adds its share of the examples with add_batch, then computes; writes the result (None
except on process 0) to OUTPUT_JSON.
"""

import json
import os
import sys

os.environ.setdefault("HF_EVALUATE_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

import evaluate  # noqa: E402


def main(module_dir, process_id, num_process, experiment_id, inputs_path, output_path):
    process_id, num_process = int(process_id), int(num_process)
    with open(inputs_path, encoding="utf-8") as handle:
        spec = json.load(handle)
    module = evaluate.load(
        module_dir, num_process=num_process, process_id=process_id, experiment_id=experiment_id, timeout=120
    )
    columns = spec["columns"]
    n = len(columns["predictions"])
    share = range(process_id * n // num_process, (process_id + 1) * n // num_process)
    batch = {name: [column[i] for i in share] for name, column in columns.items()}
    module.add_batch(**batch)
    result = module.compute(**spec["options"])
    with open(output_path, "w", encoding="utf-8") as handle:
        json.dump(result, handle)


if __name__ == "__main__":
    main(*sys.argv[1:])
