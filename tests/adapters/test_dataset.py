"""Datasets on disk: lazy parquet reads, JSONL/CSV, token counts with a local tokenizer, atomic conversion."""

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from wizard.adapters.files.dataset import DatasetError, DatasetFile, check_file, load_tokenizer, preview
from wizard.adapters.files.dataset_convert import convert_file, convert_preview
from wizard.core.data.schema import ConversionSpec
from wizard.core.findings import Severity


def verl_rows(n, source="openai/gsm8k", words=3):
    return [{"data_source": source,
             "prompt": [{"role": "user", "content": " ".join(["word"] * words) + f" {i}"}],
             "ability": "math", "reward_model": {"style": "rule", "ground_truth": str(i)},
             "extra_info": {"index": i}} for i in range(n)]


def write_parquet(path: Path, rows, row_group_size=None) -> Path:
    pq.write_table(pa.Table.from_pylist(rows), path, row_group_size=row_group_size)
    return path


def write_jsonl(path: Path, rows) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def write_tokenizer(folder: Path) -> Path:
    """A word-per-token tokenizer with a chat template: tokens = words of the templated prompt."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    folder.mkdir(parents=True, exist_ok=True)
    vocab = {"<pad>": 0, "<unk>": 1, "<|im_start|>": 2, "<|im_end|>": 3}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "PreTrainedTokenizerFast", "pad_token": "<pad>", "unk_token": "<unk>",
        "eos_token": "<|im_end|>",
        "chat_template": "{% for m in messages %}<|im_start|> {{ m['role'] }} {{ m['content'] }} <|im_end|> "
                         "{% endfor %}{% if add_generation_prompt %}<|im_start|> assistant {% endif %}"}))
    return folder


def rules(report):
    return {f.rule: f for f in report.findings}


def test_a_good_parquet_file_checks_clean(tmp_path):
    report = check_file(write_parquet(tmp_path / "train.parquet", verl_rows(64)), batch_size=32)
    assert report.ok and report.findings == []
    assert report.rows == 64
    assert report.data_sources == [{"data_source": "openai/gsm8k", "rows": 64, "scorer": "gsm8k"}]


def test_missing_columns_in_jsonl_are_named_with_rows(tmp_path):
    rows = verl_rows(6)
    for r in rows:
        del r["reward_model"]
    rows[4].pop("data_source")
    report = check_file(write_jsonl(tmp_path / "train.jsonl", rows))
    f = rules(report)
    assert "column 'reward_model.ground_truth' is missing in all 6 rows" in f["data.missing_column.reward_model"].message
    assert "row 4" in f["data.missing_value.data_source"].message
    assert not report.ok


def test_csv_with_plain_question_column(tmp_path):
    path = tmp_path / "qa.csv"
    path.write_text("prompt,data_source,answer\nWhat is 2+2?,openai/gsm8k,4\nAnd 3+3?,openai/gsm8k,6\n")
    report = check_file(path)
    f = rules(report)
    assert "rows 0, 1 is a plain string" in f["data.prompt_format"].message
    assert "data.missing_column.reward_model" in f


def test_fewer_rows_than_batch(tmp_path):
    report = check_file(write_parquet(tmp_path / "small.parquet", verl_rows(10)), batch_size=16)
    f = rules(report)["data.fewer_rows_than_batch"]
    assert "10 rows" in f.message and "16" in f.message and "ZeroDivisionError" in f.message


def test_prompt_tokens_counted_with_the_local_tokenizer(tmp_path):
    rows = verl_rows(5, words=3) + verl_rows(2, words=40)
    path = write_parquet(tmp_path / "t.parquet", rows)
    tok = write_tokenizer(tmp_path / "model")
    report = check_file(path, model_dir=str(tok), max_prompt_length=20)
    # "<|im_start|> user word word word N <|im_end|> <|im_start|> assistant" = 9 tokens
    assert report.prompt_tokens == {"count": 7, "min": 9, "median": 9, "p95": 46, "max": 46}
    f = rules(report)["data.prompt_too_long"]
    assert "2 prompts (rows 5, 6)" in f.message and "data.max_prompt_length=20" in f.message
    assert "data.filter_overlong_prompts=True" in f.fix
    # with the filter on, 5 rows are left: fewer than a batch of 6
    report = check_file(path, model_dir=str(tok), max_prompt_length=20, filter_overlong=True, batch_size=6)
    assert "5 left after filter_overlong_prompts" in rules(report)["data.fewer_rows_than_batch"].message


def test_tokenizer_only_from_a_local_folder(tmp_path):
    with pytest.raises(DatasetError, match="not a local model folder"):
        load_tokenizer("Qwen/Qwen2.5-0.5B-Instruct")


def test_preview_reads_only_the_first_batch(tmp_path):
    path = write_parquet(tmp_path / "big.parquet", verl_rows(5000), row_group_size=1000)
    pv = preview(path, 3)
    assert pv.num_rows == 5000 and len(pv.rows) == 3
    assert pv.rows[2]["reward_model"]["ground_truth"] == "2"
    assert "prompt: list<element: struct<role: string, content: string>>" in pv.schema


def test_parquet_is_streamed_in_bounded_batches(tmp_path):
    path = write_parquet(tmp_path / "big.parquet", verl_rows(20000), row_group_size=2000)
    sizes = [len(b) for b in DatasetFile(path).iter_batches(["data_source"], batch_rows=4096)]
    assert sum(sizes) == 20000 and max(sizes) <= 4096
    # sampling reads the row groups that hold the sampled rows, spread over the file
    sample = DatasetFile(path).sample(5, ["reward_model"])
    assert [i for i, _ in sample] == [0, 5000, 10000, 14999, 19999]
    assert sample[1][1]["reward_model"]["ground_truth"] == "5000"


@pytest.mark.parametrize("name, content, words", [
    ("x.txt", "a", "unsupported file type"),
    ("bad.parquet", "not parquet", "not a readable parquet file"),
    ("bad.jsonl", '{"a": 1}\n{oops\n', "line 2 is not valid JSON"),
])
def test_unreadable_files_are_one_line_errors(tmp_path, name, content, words):
    path = tmp_path / name
    path.write_text(content)
    with pytest.raises(DatasetError, match=words):
        check_file(path)


def test_missing_file(tmp_path):
    with pytest.raises(DatasetError, match="no such file"):
        DatasetFile(tmp_path / "nope.parquet")


def test_convert_jsonl_to_verl_parquet_atomically_with_backup(tmp_path):
    src = write_jsonl(tmp_path / "qa.jsonl", [{"question": f"How many {i}?", "answer": i} for i in range(7)]
                      + [{"question": "", "answer": 3}])
    out = tmp_path / "out" / "train.parquet"
    spec = ConversionSpec("question", "answer", data_source="openai/gsm8k",
                          template='{question} Let\'s think step by step and output the final answer after "####".')
    first = convert_preview(src, spec, 2)
    assert not out.exists()  # a preview writes nothing
    assert first[1]["prompt"][0]["content"].startswith("How many 1? Let's think")
    conv = convert_file(src, out, spec)
    assert conv.written == 7 and conv.skipped == [7] and conv.backup is None
    assert "row 7" in conv.findings[0].message
    table = pq.read_table(out)
    assert table.num_rows == 7 and table.column("reward_model").to_pylist()[6]["ground_truth"] == "6"
    # the written file is what verl expects: it checks clean
    assert check_file(out, batch_size=4).ok
    # a second conversion keeps the first file as a backup
    conv2 = convert_file(src, out, ConversionSpec("question", "answer", data_source="openai/gsm8k"))
    assert conv2.backup and pq.read_table(conv2.backup).num_rows == 7
    assert [p.name for p in out.parent.iterdir() if p.name.startswith(".")] == []  # no temp file left


def test_converted_file_loads_in_verl_dataset_reader(tmp_path):
    """verl's RLHFDataset reads parquet with datasets.load_dataset: the converted rows come back intact."""
    datasets = pytest.importorskip("datasets")
    src = write_jsonl(tmp_path / "qa.jsonl", [{"q": "What?", "a": "42"}])
    out = tmp_path / "train.parquet"
    convert_file(src, out, ConversionSpec("q", "a", data_source="openai/gsm8k", system="Be brief."))
    row = datasets.load_dataset("parquet", data_files=str(out))["train"][0]
    assert row["prompt"] == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "What?"}]
    assert row["reward_model"]["ground_truth"] == "42" and row["data_source"] == "openai/gsm8k"


def test_convert_refuses_a_missing_column_and_overwriting_the_input(tmp_path):
    from wizard.core.data.schema import ConversionError

    src = write_jsonl(tmp_path / "qa.jsonl", [{"q": "x", "a": "1"}])
    with pytest.raises(ConversionError, match="--answer 'answer': no such column"):
        convert_file(src, tmp_path / "o.parquet", ConversionSpec("q", "answer"))
    src_pq = write_parquet(tmp_path / "in.parquet", [{"q": "x", "a": "1"}])
    with pytest.raises(DatasetError, match="overwrite the input"):
        convert_file(src_pq, src_pq, ConversionSpec("q", "a"))


def test_conversion_to_an_unknown_source_warns(tmp_path):
    src = write_jsonl(tmp_path / "qa.jsonl", [{"q": "x", "a": "1"}])
    conv = convert_file(src, tmp_path / "o.parquet", ConversionSpec("q", "a"))
    assert conv.findings[0].severity is Severity.WARNING and "'custom' has no built-in scorer" in conv.findings[0].message


def test_a_vision_parquet_with_a_missing_image_is_named_by_row(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    from wizard.adapters.files.dataset import check_file

    rows = []
    for i in range(6):
        rows.append({"data_source": "geo3k", "prompt": [{"role": "user", "content": "<image> Find x."}],
                     "images": [] if i == 4 else [{"bytes": b"\x89PNG..."}],
                     "reward_model": {"style": "rule", "ground_truth": "3"}, "extra_info": {"index": i}})
    path = tmp_path / "geo3k.parquet"
    pq.write_table(pa.Table.from_pylist(rows), path)
    report = check_file(path)
    (f,) = [f for f in report.findings if f.rule == "data.media_placeholders"]
    assert f.severity.value == "error" and "row 4" in f.message and "'images'" in f.message


def test_prompt_lengths_read_a_parquet_only_as_far_as_the_limit_and_count_its_rows_from_the_footer(tmp_path):
    from wizard.adapters.files.dataset import prompt_lengths

    path = write_parquet(tmp_path / "train.parquet", verl_rows(100, words=8), row_group_size=8)
    lengths, rows, how = prompt_lengths(path, limit=10)
    assert rows == 100 and 10 <= len(lengths) < 100 and "characters / 4" in how
    text = tmp_path / "train.jsonl"
    write_jsonl(text, verl_rows(30))
    assert prompt_lengths(text, limit=10)[1] == 30  # a text format is counted through


def test_prompt_lengths_say_the_images_of_a_vision_dataset_are_left_out(tmp_path):
    from wizard.adapters.files.dataset import prompt_lengths

    rows = [{**r, "images": [{"bytes": b"\x89PNG fake"}]} for r in verl_rows(5)]
    for r in rows:
        r["prompt"] = [{"role": "user", "content": "<image> " + r["prompt"][0]["content"]}]
    path = write_parquet(tmp_path / "geo.parquet", rows)
    _, _, how = prompt_lengths(path)
    assert "the images of the rows are not counted" in how
    assert "not counted" not in prompt_lengths(write_parquet(tmp_path / "text.parquet", verl_rows(5)))[2]
