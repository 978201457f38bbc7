"""The R1.8 ModelZoo NLP models besides gpt2 as the tests run them: each model's folder, the params
it ships for weight streaming, shrunk in size only, and small synthetic data in the layout its data
processor reads.

| model | config | data processor (data written) |
|---|---|---|
| gpt3 | Cerebras_GPT/111m.yaml (`execution_strategy: weight_streaming`) | GptHDF5DataProcessor (HDF5) |
| gptj | params_gpt_neox_small.yaml (its smallest) | GptHDF5DataProcessor (HDF5) |
| bert | bert_large_MSL128_ws.yaml | BertCSVDynamicMaskDataProcessor (CSV + vocab) |
| t5 | t5_3B.yaml (the README's weight streaming config) | T5DynamicDataProcessor (text + vocab) |
| transformer | transformer_base.yaml, `enable_vts: False` | TransformerDynamicDataProcessor (text pairs) |

transformer ships pipelined configs only, with Variable Tensor Shape (`enable_vts: True`), which
weight streaming does not take: refused, naming the setting (the tests check it), so its params
turn it off, the one change beyond size. layers_api_demo is left out: its model does not build in
the release itself (model.py calls GPTLMHeadModelLoss without its loss_weight: a TypeError on any
backend, before the runtime is reached).

`Model.prepare(release, base)` writes the data and the params copy under `base` and returns the
params' path. Every runconfig gets the two keys the cstorch flow reads (`experimental_api: True`
chooses it; `transfer_processes`, which only that flow indexes) and tiny step counts.
"""

from __future__ import annotations

import csv
import os
from dataclasses import dataclass
from typing import Callable

import numpy as np
import yaml

BATCH, MSL, VOCAB = 4, 16, 64
TINY = {"hidden_size": 32, "num_hidden_layers": 2, "num_heads": 2, "filter_size": 64}
RUNCONFIG = {"max_steps": 4, "checkpoint_steps": 2, "log_steps": 1, "experimental_api": True,
             "transfer_processes": None}
# Examples per data folder: enough for every one of the configs' input workers (up to 8) to
# make two batches of its own. The text formats' processors give each worker whole files (and
# assert there are at least as many files as workers): FILES files a folder.
TRAIN_EXAMPLES, EVAL_EXAMPLES, FILES = 64, 64, 8


def write_hdf5(folder: str, examples: int, seed: int) -> None:
    """`examples` random sequences in gpt2's create_hdf5_dataset.py layout: `data` [n, 3, msl]
    int32 of input_ids, attention_mask, labels; attribute n_examples."""
    import h5py

    os.makedirs(folder)
    ids = np.random.default_rng(seed).integers(0, VOCAB, size=(examples, MSL + 1))
    data = np.stack([ids[:, :-1], np.ones((examples, MSL), np.int64), ids[:, 1:]], axis=1).astype("i4")
    with h5py.File(os.path.join(folder, "data-0.h5"), "w") as f:
        f.attrs["n_examples"] = examples
        f.create_dataset("data", data=data, dtype="i4", chunks=(1, 3, MSL), compression="gzip")


def _words(specials: list[str]) -> list[str]:
    """A vocabulary of VOCAB entries: `specials` first, then plain words."""
    return specials + [f"w{i}" for i in range(VOCAB - len(specials))]


def _write_vocab(path: str, words: list[str]) -> str:
    with open(path, "w") as f:
        f.write("".join(w + "\n" for w in words))
    return path


def _write_bert_csv(folder: str, examples: int, seed: int) -> None:
    """BertCSVDynamicMaskDataProcessor's layout (create_csv_mlm_only / the NSP scripts): CSV
    files with `tokens` (a Python list literal, [CLS] a [SEP] b [SEP]), `segment_ids` and
    `is_random_next`, listed with their example counts in meta.dat."""
    rng = np.random.default_rng(seed)
    os.makedirs(folder)
    plain = [str(w) for w in _words(BERT_SPECIALS)[len(BERT_SPECIALS):]]
    for i in range(FILES):
        with open(os.path.join(folder, f"data-{i}.csv"), "w", newline="") as f:
            writer = csv.DictWriter(f, fieldnames=["tokens", "segment_ids", "is_random_next"])
            writer.writeheader()
            for _ in range(examples // FILES):
                a, b = (int(n) for n in rng.integers(2, 6, size=2))
                tokens = ["[CLS]", *rng.choice(plain, a).tolist(), "[SEP]", *rng.choice(plain, b).tolist(), "[SEP]"]
                writer.writerow({"tokens": str(tokens), "segment_ids": str([0] * (a + 2) + [1] * (b + 1)),
                                 "is_random_next": int(rng.integers(0, 2))})
    _write_meta(folder, [f"data-{i}.csv {examples // FILES}" for i in range(FILES)])


def _write_meta(folder: str, lines: list[str]) -> None:
    with open(os.path.join(folder, "meta.dat"), "w") as f:
        f.write("".join(line + "\n" for line in lines))


def _lines(path: str, rng, count: int, plain: list[str], low: int, high: int) -> None:
    """`count` lines of `low` to `high` - 1 random words into `path`."""
    with open(path, "w") as f:
        f.write("".join(" ".join(rng.choice(plain, int(rng.integers(low, high)))) + "\n" for _ in range(count)))


def _write_t5_text(folder: str, examples: int, seed: int) -> None:
    """T5DynamicDataProcessor's layout (t5/input/preprocess_c4.sh's output): text files of one
    tokenized document a line, listed with their line counts in meta.dat."""
    rng = np.random.default_rng(seed)
    os.makedirs(folder)
    plain = _words(T5_SPECIALS)[len(T5_SPECIALS):]
    for i in range(FILES):  # documents of 17-31 words: one sequence each after span corruption
        _lines(os.path.join(folder, f"c4-{i}.txt"), rng, examples // FILES, plain, MSL + 1, 2 * MSL)
    _write_meta(folder, [f"c4-{i}.txt {examples // FILES}" for i in range(FILES)])


def _write_translation(folder: str, examples: int, seed: int) -> None:
    """TransformerDynamicDataProcessor's layout (transformer/input/data_processing): aligned
    source and target text files of one tokenized sentence a line, listed as `src tgt count`
    lines in the source folder's meta.dat (paths as written there)."""
    rng = np.random.default_rng(seed)
    os.makedirs(folder)
    plain = _words(T5_SPECIALS)[len(T5_SPECIALS):]
    lines = []
    for i in range(FILES):
        src, tgt = os.path.join(folder, f"data-{i}.en"), os.path.join(folder, f"data-{i}.de")
        for path in (src, tgt):  # shorter than the sequence lengths: the processor drops longer ones
            _lines(path, rng, examples // FILES, plain, 3, MSL - 2)
        lines.append(f"{src} {tgt} {examples // FILES}")
    _write_meta(folder, lines)


BERT_SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
T5_SPECIALS = ["<pad>", "</s>", "<unk>", "<s>"]


def _gpt(params: dict, data: str, model: dict, extra_input: dict | None = None) -> None:
    for section, folder, examples, seed in (("train_input", "train", TRAIN_EXAMPLES, 0),
                                            ("eval_input", "val", EVAL_EXAMPLES, 1)):
        write_hdf5(os.path.join(data, folder), examples, seed)
        params[section].update(data_dir=os.path.join(data, folder), max_sequence_length=MSL, batch_size=BATCH,
                               **(extra_input or {}))
    params["model"].update(vocab_size=VOCAB, max_position_embeddings=MSL, **TINY, **model)


def _gpt3(params: dict, data: str) -> None:
    _gpt(params, data, {}, {"vocab_size": VOCAB})


def _gptj(params: dict, data: str) -> None:
    # rotary_dim: a quarter of the head's width, as the shipped config's comment says
    _gpt(params, data, {"rotary_dim": TINY["hidden_size"] // TINY["num_heads"] // 4}, {"vocab_size": VOCAB})


def _bert(params: dict, data: str) -> None:
    vocab = _write_vocab(os.path.join(data, "vocab.txt"), _words(BERT_SPECIALS))
    for section, folder, examples, seed in (("train_input", "train", TRAIN_EXAMPLES, 0),
                                            ("eval_input", "val", EVAL_EXAMPLES, 1)):
        _write_bert_csv(os.path.join(data, folder), examples, seed)
        params[section].update(data_dir=os.path.join(data, folder), vocab_file=vocab, max_sequence_length=MSL,
                               max_predictions_per_seq=3, batch_size=BATCH)
    params["model"].update(vocab_size=VOCAB, max_position_embeddings=MSL, **TINY)


def _seq2seq(params: dict, data: str, write: Callable, tgt_msl: int, model: dict) -> None:
    vocab = _write_vocab(os.path.join(data, "vocab.txt"), _words(T5_SPECIALS))
    for section, folder, examples, seed in (("train_input", "train", TRAIN_EXAMPLES, 0),
                                            ("eval_input", "val", EVAL_EXAMPLES, 1)):
        write(os.path.join(data, folder), examples, seed)
        params[section].update(src_data_dir=os.path.join(data, folder), src_vocab_file=vocab,
                               src_max_sequence_length=MSL, tgt_max_sequence_length=tgt_msl, batch_size=BATCH)
        if "tgt_data_dir" in params[section]:
            params[section].update(tgt_data_dir=os.path.join(data, folder), tgt_vocab_file=vocab)
        if "shuffle_buffer" in params[section]:
            params[section]["shuffle_buffer"] = 4 * BATCH
    params["model"].update(d_kv=8, num_heads=2, d_model=16, d_ff=32, encoder_num_hidden_layers=2,
                           decoder_num_hidden_layers=2, **model)


def _t5(params: dict, data: str) -> None:
    # src 16 tokens after T5's span corruption leaves targets of at most 4 (t5/input/utils.py)
    _seq2seq(params, data, _write_t5_text, 8, {"src_vocab_size": VOCAB, "extra_ids": 4})
    for section in ("train_input", "eval_input"):
        params[section]["extra_ids"] = 4


def _transformer(params: dict, data: str) -> None:
    # The one change beyond size: both shipped configs are Layer Pipelined ones with Variable Tensor
    # Shape, which weight streaming does not take (refused, naming enable_vts: see the tests)
    _seq2seq(params, data, _write_translation, MSL, {"src_vocab_size": VOCAB, "tgt_vocab_size": VOCAB,
                                                     "enable_vts": False})


@dataclass(frozen=True)
class Model:
    """One of the release's models: its folder under modelzoo/transformers/pytorch, the shipped
    config the tests shrink, and how they shrink it."""

    name: str
    config: str
    shrink: Callable[[dict, str], None]

    def folder(self, release: str) -> str:
        return os.path.join(release, "modelzoo", "transformers", "pytorch", self.name)

    def prepare(self, release: str, base: str) -> str:
        """Write the data and the shrunk params under `base`; the params' path."""
        with open(os.path.join(self.folder(release), "configs", self.config)) as f:
            params = yaml.safe_load(f)
        data = os.path.join(base, self.name)
        os.makedirs(data)
        self.shrink(params, data)
        params["runconfig"].update(RUNCONFIG)
        path = os.path.join(data, "params_tiny.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(params, f, sort_keys=False)
        return path


MODELS = {m.name: m for m in (
    Model("gpt3", os.path.join("Cerebras_GPT", "111m.yaml"), _gpt3),
    Model("gptj", "params_gpt_neox_small.yaml", _gptj),
    Model("bert", "bert_large_MSL128_ws.yaml", _bert),
    Model("t5", "t5_3B.yaml", _t5),
    Model("transformer", "transformer_base.yaml", _transformer),
)}
