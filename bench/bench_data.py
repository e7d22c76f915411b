"""How long `data preview` and `data check` take on a large parquet file written here, and how much memory
they use, to show that they stream (row groups / record batches) instead of loading the file.

Prints figures; asserts nothing. Run: .venv/bin/python bench/bench_data.py [--rows 200000] [--prompt-bytes 5000]
The defaults write about 1 GB of parquet (incompressible prompt text) into a temporary folder and delete it.
"""

from __future__ import annotations

import argparse
import os
import random
import resource
import string
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def write_big_parquet(path: Path, rows: int, prompt_bytes: int, chunk: int = 10_000) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    from wizard.adapters.files.dataset_convert import verl_schema

    rng = random.Random(0)
    alphabet = string.ascii_lowercase + " "
    pool = "".join(rng.choices(alphabet, k=prompt_bytes + 4096))  # random text: parquet cannot compress it away
    with pq.ParquetWriter(path, verl_schema()) as writer:
        for start in range(0, rows, chunk):
            batch = []
            for i in range(start, min(rows, start + chunk)):
                off = rng.randrange(4096)
                batch.append({"data_source": "openai/gsm8k" if i % 1000 else "my/data",
                              "prompt": [{"role": "user", "content": f"question {i}: " + pool[off:off + prompt_bytes]}],
                              "ability": "math", "reward_model": {"style": "rule", "ground_truth": str(i)},
                              "extra_info": {"index": i, "question": "", "answer": str(i), "split": "train"}})
            writer.write_table(pa.Table.from_pylist(batch, schema=verl_schema()), row_group_size=chunk)


def rss_mb() -> float:
    """Peak resident memory of this process (VmHWM: unlike ru_maxrss it does not inherit the parent's peak)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=200_000)
    ap.add_argument("--prompt-bytes", type=int, default=10_000, help="characters of prompt per row (10000)")
    ap.add_argument("--keep", metavar="DIR", help="write the file there and keep it")
    ap.add_argument("--measure", metavar="FILE", help=argparse.SUPPRESS)  # the child that reads
    args = ap.parse_args()
    if args.measure:
        return measure(Path(args.measure))

    folder = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="bench-data-"))
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "big.parquet"
    t0 = time.perf_counter()
    write_big_parquet(path, args.rows, args.prompt_bytes)
    size = path.stat().st_size
    print(f"wrote {args.rows} rows, {size / 1e9:.2f} GB of parquet in {time.perf_counter() - t0:.1f} s ({path})")
    # a fresh process reads it, so its peak memory is the reader's alone
    subprocess.run([sys.executable, __file__, "--measure", str(path)], check=True)
    if not args.keep:
        os.unlink(path)
        os.rmdir(folder)


def measure(path: Path) -> None:
    from wizard.adapters.files.dataset import check_file, preview

    size = path.stat().st_size
    print(f"peak memory after imports: {rss_mb():.0f} MB")
    t0 = time.perf_counter()
    pv = preview(path, 5)
    print(f"preview, first 5 rows:           {(time.perf_counter() - t0) * 1000:8.1f} ms   "
          f"(num_rows {pv.num_rows} from the footer)   peak memory {rss_mb():.0f} MB")

    t0 = time.perf_counter()
    report = check_file(path, batch_size=1024)
    secs = time.perf_counter() - t0
    rules = sorted({f.rule for f in report.findings})
    print(f"check, every row (schema, data_source, batch): {secs:8.2f} s  = {report.rows / secs:,.0f} rows/s   "
          f"peak memory {rss_mb():.0f} MB (file {size / 1e6:.0f} MB)   findings: {', '.join(rules) or 'none'}")


if __name__ == "__main__":
    main()
