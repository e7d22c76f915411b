"""A tiny GSM8K-like parquet in verl's row format, written by the tests (nothing is downloaded)."""

from __future__ import annotations

from pathlib import Path


def write_gsm8k_like(path: Path, rows: int) -> Path:
    import pyarrow as pa
    import pyarrow.parquet as pq

    data = [{"data_source": "openai/gsm8k", "prompt": [{"role": "user", "content": f"how many is {i} and {i}"}],
             "ability": "math", "reward_model": {"style": "rule", "ground_truth": str(2 * i)},
             "extra_info": {"split": "train", "index": i}} for i in range(rows)]
    pq.write_table(pa.Table.from_pylist(data), path)
    return path
