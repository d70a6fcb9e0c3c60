import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.support.helpers import assert_head_and_tail

from super_bench.environment.kernel.output import OutputBuffer, cap_text, clean_and_cap, clean_output, strip_ansi


def test_strip_ansi_removes_colours_cursor_moves_and_titles() -> None:
    text = "\x1b[31mred\x1b[0m \x1b[2K\x1b[1Aup \x1b]0;title\x07done"
    assert strip_ansi(text) == "red up done"


def test_progress_bar_redraws_collapse_to_their_last_state() -> None:
    raw = " 10%|#   |\r 50%|##  |\r100%|####|\nnext line\r\n"
    assert clean_output(raw) == "100%|####|\nnext line\n"


def test_trailing_carriage_return_keeps_the_text_before_it() -> None:
    assert clean_output("saved\r\nstill here\r") == "saved\nstill here"


def test_control_characters_are_dropped_but_tabs_kept() -> None:
    assert clean_output("a\tb\x07c\x00d") == "a\tbcd"


def test_cleaning_a_huge_single_line_without_newlines() -> None:
    raw = "".join(f"\rstep {i}" for i in range(200_000)) + "\nEpoch 3 finished\n"
    assert clean_output(raw) == "step 199999\nEpoch 3 finished\n"


def test_cleaning_in_blocks_gives_what_one_pass_gives() -> None:
    from super_bench.environment.kernel.output import _BLOCK, _clean

    bar = "".join(f"\r\x1b[32m{i:3d}%|{'#' * (i // 10)}\x1b[0m|" for i in range(0, 101, 5))
    lines = [bar if i % 3 else f"plain line {i}\x07" for i in range(60_000)]
    raw = "\n".join(lines) + "\nlast line without newline \r done"
    assert len(raw) > 3 * _BLOCK
    cleaned = clean_output(raw)
    assert cleaned == _clean(raw)
    assert cleaned.count("\n") == raw.count("\n")
    assert cleaned.endswith("\n done")


def test_cleaning_and_capping_a_flood_gives_what_capping_its_cleaned_copy_gives() -> None:
    from super_bench.environment.kernel.output import _BLOCK, clean_and_cap

    bar = "".join(f"\r\x1b[32m{i:3d}%|{'#' * (i // 10)}\x1b[0m|" for i in range(0, 101, 5))
    raw = "\n".join(bar if i % 3 else f"line {i}" for i in range(80_000)) + "\nno newline \r at the end"
    assert len(raw) > 4 * _BLOCK
    for limit, fraction in [(1000, 0.1), (100_000, 0.1), (300_000, 0.5), (5000, 1.0), (5000, 0.0), (10**8, 0.1)]:
        assert clean_and_cap(raw, limit, fraction) == cap_text(clean_output(raw), limit, fraction), (limit, fraction)


def test_cap_keeps_head_and_tail_with_a_marker() -> None:
    text = "H" * 50 + "M" * 1000 + "T" * 100
    capped = cap_text(text, 200)
    assert capped.startswith("H" * 20)
    assert capped.endswith("T" * 100)
    assert "characters omitted" in capped
    assert cap_text("short", 200) == "short"


def test_output_buffer_keeps_everything_under_its_ceiling() -> None:
    buffer = OutputBuffer(max_chars=1000)
    for i in range(10):
        buffer.append(f"line {i}\n")
    assert buffer.take() == "".join(f"line {i}\n" for i in range(10))
    assert buffer.take() == ""


def test_output_buffer_drops_the_middle_beyond_its_ceiling() -> None:
    buffer = OutputBuffer(max_chars=1000)
    buffer.append("START")
    for _ in range(1000):
        buffer.append("x" * 100)
    buffer.append("END")
    text = buffer.text()
    assert text.startswith("START")
    assert text.endswith("END")
    assert buffer.dropped > 90_000
    assert "dropped by super-bench" in text
    assert len(text) < 1200


def _kept(full: str, limit: int) -> str:
    """What a buffer with the ceiling ``limit`` keeps of ``full``: all of it, or its head and tail."""
    if len(full) <= limit:
        return full
    head, tail = limit // 4, limit - limit // 4
    dropped = len(full) - head - tail
    return (
        f"{full[:head]}\n[... {dropped:,} characters of output dropped by super-bench ...]\n{full[len(full) - tail :]}"
    )


@settings(max_examples=300, deadline=None)
@given(chunks=st.lists(st.text(max_size=60), max_size=60), limit=st.integers(1, 400), peeks=st.integers(0, 3))
def test_output_buffer_keeps_the_head_and_tail_of_whatever_comes(chunks: list[str], limit: int, peeks: int) -> None:
    buffer = OutputBuffer(max_chars=limit)
    for i, chunk in enumerate(chunks):
        buffer.append(chunk)
        # Never much more than the ceiling is held, however much comes.
        assert sum(map(len, [*buffer._head, *buffer._chunks])) <= 1.5 * limit + 60
        if peeks and i % (5 * peeks) == 0:  # asking for the text on the way changes nothing
            assert buffer.text() == _kept("".join(chunks[: i + 1]), limit)
    full = "".join(chunks)
    assert buffer.text() == _kept(full, limit)
    assert buffer.dropped == max(0, len(full) - limit)
    assert buffer.take() == _kept(full, limit) and buffer.take() == "" and buffer.dropped == 0


@settings(max_examples=200, deadline=None)
@given(chunks=st.lists(st.text(min_size=1, max_size=40), max_size=40), limits=st.lists(st.integers(1, 300), min_size=2))
def test_a_ceiling_lowered_or_raised_mid_cell_keeps_a_head_and_a_tail_within_it(
    chunks: list[str], limits: list[int]
) -> None:
    buffer = OutputBuffer(max_chars=limits[0])
    for i, chunk in enumerate(chunks):
        buffer.max_chars = limits[i % len(limits)]
        buffer.append(chunk)
    assert_head_and_tail("".join(chunks), buffer.text(), buffer.dropped, buffer.max_chars)


@settings(max_examples=300, deadline=None)
@given(
    parts=st.lists(
        st.sampled_from(["\r", "\n", "\r\n", "ab", "\x1b[32m", "\x1b[0m", "\x07", " 42%|##|", "é", "\r\r"]),
        max_size=60,
    ),
    block=st.integers(1, 12),
)
def test_long_lines_with_redraws_clean_in_blocks_as_in_one_pass(parts: list[str], block: int) -> None:
    from super_bench.environment.kernel import output as output_module

    raw = "".join(parts)
    expected = output_module._clean(raw)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(output_module, "_BLOCK", block)  # every line longer than a block or two
        assert "".join(map(output_module._clean, output_module._blocks(raw))) == expected
        assert output_module.clean_and_cap(raw, 10**6) == expected
        assert output_module.clean_and_cap(raw, 7, 0.3) == cap_text(expected, 7, 0.3)


def test_a_progress_flood_of_one_line_is_cleaned_without_a_copy_of_it() -> None:
    import tracemalloc

    flood = "".join(f"\r{i % 100:3d}%|{'#' * (i % 10)}| {i}/400000" for i in range(400_000)) + "\ndone\n"
    tracemalloc.start()
    try:
        shown = clean_and_cap(flood, 100_000)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert shown == " 99%|#########| 399999/400000\ndone\n"
    assert peak < len(flood) // 10
