"""A tiny random-weight llama model (2 layers, width 64, ~9 MB) for fast protocol checks
against a real llama-server: its replies mean nothing, but every request path (chat,
json_schema, logprobs, n, embeddings) runs through the real server in milliseconds.

Written with the `gguf` package from a vocab-only GGUF (llama.cpp's ggml-vocab-llama-spm,
in the llama-cpp-python sdist). Two traps, measured (../shared reference):
- the chat template must END with the assistant cue, whatever `add_generation_prompt` says:
  llama-server feeds the text that flag adds into a response_format grammar, and this
  vocab's cue is plain text the JSON grammar rejects ("Failed to initialize samplers");
- random weights never stop and rarely close a JSON string: one embedding channel is a
  constant, and the output layer reads it to favour end-of-sequence and closing quotes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

VERSION = 1  # bump when the model changes: the cached file is named by it
LAYERS, WIDTH, HEADS, FFN = 2, 64, 4, 128
TEMPLATE = ("{% for m in messages %}<|{{ m['role'] }}|>\n{{ m['content'] }}\n"
            "{% endfor %}<|assistant|>\n")
FAVOURED = {'"': 3.4, '",': 3.4, '"}': 3.4, '}': 3.0}  # piece -> weight on the bias channel
EOS_WEIGHT = 3.9
BIAS_CHANNEL = 8.0


def _tokenizer_fields(vocab: Path):
    """(key, value, type, sub_type) of every tokenizer.* field of the vocab file."""
    import gguf

    reader = gguf.GGUFReader(str(vocab))
    for name, field in reader.fields.items():
        if not name.startswith("tokenizer.") or name == "tokenizer.chat_template":
            continue
        kind = field.types[0]
        sub = field.types[-1] if kind == gguf.GGUFValueType.ARRAY else None
        yield name, field.contents(), kind, sub


def _weights(tokens: list[str], eos: int, rng: np.random.Generator) -> dict[str, np.ndarray]:
    n = len(tokens)
    f32 = np.float32

    def rand(*shape: int, scale: float = 0.02) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(f32)

    embed = rng.standard_normal((n, WIDTH)).astype(f32)  # stored as f16 (half the file)
    embed[:, 0] = BIAS_CHANNEL  # the constant channel the output layer reads as a bias
    output = rng.standard_normal((n, WIDTH)).astype(f32)
    output[:, 0] = 0.0
    output[eos, 0] = EOS_WEIGHT
    for piece, weight in FAVOURED.items():
        if piece in tokens:
            output[tokens.index(piece), 0] = weight
    out = {"token_embd.weight": embed.astype(np.float16),
           "output.weight": output.astype(np.float16),
           "output_norm.weight": np.ones(WIDTH, f32)}
    for i in range(LAYERS):
        b = f"blk.{i}."
        out |= {b + "attn_norm.weight": np.ones(WIDTH, f32),
                b + "ffn_norm.weight": np.ones(WIDTH, f32),
                **{b + f"attn_{x}.weight": rand(WIDTH, WIDTH) for x in ("q", "k", "v", "output")},
                b + "ffn_gate.weight": rand(FFN, WIDTH), b + "ffn_up.weight": rand(FFN, WIDTH),
                b + "ffn_down.weight": rand(WIDTH, FFN)}
    return out


def write_tiny_model(vocab: Path, target: Path, seed: int = 0) -> Path:
    """Write the model to `target` (about a second)."""
    import gguf

    fields = list(_tokenizer_fields(vocab))
    values = {name: value for name, value, _, _ in fields}
    tokens = list(values["tokenizer.ggml.tokens"])
    writer = gguf.GGUFWriter(str(target), "llama")
    writer.add_name("checkllm tiny random judge")
    writer.add_context_length(8192)
    writer.add_embedding_length(WIDTH)
    writer.add_block_count(LAYERS)
    writer.add_feed_forward_length(FFN)
    writer.add_head_count(HEADS)
    writer.add_head_count_kv(HEADS)
    writer.add_rope_dimension_count(WIDTH // HEADS)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_vocab_size(len(tokens))
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_F16)
    for name, value, kind, sub in fields:
        writer.add_key_value(name, value, kind, sub)
    writer.add_chat_template(TEMPLATE)
    eos = int(values["tokenizer.ggml.eos_token_id"])
    for name, tensor in _weights(tokens, eos, np.random.default_rng(seed)).items():
        writer.add_tensor(name, tensor)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return target
