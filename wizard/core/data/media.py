"""Multimodal and agent columns of a verl dataset (rl_dataset.py, agent_loop.py in verl 0.9.1).

verl pairs each ``<image>``/``<video>``/``<audio>`` placeholder in the prompt's message contents with the
next item of the row's ``images``/``videos``/``audios`` list (``_build_messages``): a placeholder without
an item stops the dataloader with ``AssertionError: image_offset 1 >= len(images) 1``; an item without a
placeholder is never shown to the model; items must be dicts (``{"bytes": ...}``, ``{"image": path}``) or
images. Tool-using agent loops read ``extra_info.tools_kwargs``; ``agent_name`` picks a registered loop.
"""

from __future__ import annotations

MEDIA = {"images": "<image>", "videos": "<video>", "audios": "<audio>"}
BUILTIN_AGENT_LOOPS = ("single_turn_agent", "tool_agent")


def media_problems(row: dict, prompt_key: str, present: list[str]) -> list[tuple[str, str, str]]:
    """(column, kind, example) for each multimodal or agent problem of one row."""
    out: list[tuple[str, str, str]] = []
    messages = row.get(prompt_key)
    texts = [m["content"] for m in messages if isinstance(m, dict) and isinstance(m.get("content"), str)] \
        if isinstance(messages, (list, tuple)) else []
    for column, tag in MEDIA.items():
        tags = sum(t.count(tag) for t in texts)
        items = row.get(column) if column in present else None
        if items is not None and not isinstance(items, (list, tuple)):
            out.append((column, "not_list", f"{type(items).__name__}"))
            continue
        n = len(items or [])
        if tags > n:
            out.append((column, "too_few", f"{tags} {tag} in the prompt, {n} in '{column}'"))
        elif n > tags:
            out.append((column, "unused", f"{n} in '{column}', {tags} {tag} in the prompt"))
        if column == "images" and any(not isinstance(i, dict) for i in items or []):
            bad = next(i for i in items if not isinstance(i, dict))
            out.append((column, "bad_item", f"{type(bad).__name__}: {str(bad)[:40]}"))
    info = row.get("extra_info")
    if isinstance(info, dict) and info.get("need_tools_kwargs") and not info.get("tools_kwargs"):
        out.append(("extra_info.tools_kwargs", "missing", "need_tools_kwargs is true"))
    agent = row.get("agent_name") if "agent_name" in present else None
    if agent is not None and agent not in BUILTIN_AGENT_LOOPS:
        out.append(("agent_name", "custom", str(agent)[:40]))
    return out


def media_finding_text(column: str, kind: str, where: str, example: str) -> tuple[str, str, str, str]:
    """(rule, severity name, message, fix) for a problem ``media_problems`` reported."""
    ex = f" ({example})" if example else ""
    if kind == "too_few":
        return ("data.media_placeholders", "error",
                f"{where}: the prompt has more {MEDIA[column]} placeholders than items in '{column}'{ex}; verl's "
                f"dataloader stops with AssertionError ({column[:-1]}_offset >= len({column}))",
                f"give each {MEDIA[column]} in the prompt one item in '{column}', in order")
    if kind == "unused":
        return ("data.media_unused", "warning",
                f"{where}: '{column}' has items no {MEDIA[column]} placeholder in the prompt points at{ex}; verl "
                "never shows them to the model (and the processor may refuse the mismatch)",
                f"put one {MEDIA[column]} in the message text where each item belongs")
    if kind == "not_list":
        return ("data.media_format", "error", f"{where}: '{column}' is not a list{ex}; verl reads it as a list of items",
                f"make '{column}' a list, e.g. [{{'bytes': ...}}] or [{{'image': 'file:///path.jpg'}}]")
    if kind == "bad_item":
        return ("data.media_format", "error",
                f"{where}: an item of 'images' is not a dict{ex}; verl's process_image takes "
                "{'bytes': ...} or {'image': path or URL} (qwen_vl_utils.fetch_image)",
                "store each image as {'bytes': <png/jpeg bytes>} or {'image': 'file:///abs/path.jpg'}")
    if column == "extra_info.tools_kwargs":
        return ("data.tools_kwargs", "warning",
                f"{where}: extra_info.need_tools_kwargs is true but tools_kwargs is empty{ex}; the tool agent "
                "loop then creates its tools without their arguments",
                "fill extra_info.tools_kwargs = {tool_name: {'create_kwargs': {...}}} in those rows")
    return ("data.agent_name", "info",
            f"{where}: agent_name '{example}' is not one of verl's built-in agent loops "
            f"({', '.join(BUILTIN_AGENT_LOOPS)}); verl asserts it is registered (actor_rollout_ref.rollout."
            "agent.agent_loop_config_path) when the first batch is generated",
            "register it in an agent loop config, or use single_turn_agent / tool_agent")
