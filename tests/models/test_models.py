"""Models: the mock, the OpenAI and Anthropic providers against a real local HTTP server, retries,
errors, prices and the response cache."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from tests.support.model_server import error, model_server, raw, reply

from super_bench.errors import ConfigError, ModelError
from super_bench.models import ModelOptions, ModelRequest, create_model
from super_bench.models.mock import MockModel
from super_bench.models.pricing import PriceTable


def request(text: str = "hi", **settings: object) -> ModelRequest:
    return ModelRequest(messages=[{"role": "user", "content": text}], **settings)  # type: ignore[arg-type]


def options(tmp_path: Path | None = None, **settings: object) -> ModelOptions:
    """No cache unless a directory is given; few, quick retries."""
    settings.setdefault("max_retries", 2)
    cache = tmp_path / "cache.sqlite" if tmp_path else None
    return ModelOptions(cache=cache, **settings)  # type: ignore[arg-type]


# -- the mock model ----------------------------------------------------------------------------
def test_mock_replies_from_a_text_or_json_script(tmp_path: Path) -> None:
    text = tmp_path / "replies.txt"
    text.write_text("first\nline two\n=====\nsecond\n======\n\nthird\n")
    model = create_model(f"mock/{text}")
    assert [model.complete(request()).text for _ in range(3)] == ["first\nline two", "second", "third"]
    with pytest.raises(ModelError, match="no reply left: its script has 3"):
        model.complete(request())
    as_json = tmp_path / "replies.json"
    as_json.write_text(json.dumps(["a", "b ===== c"]))
    model = create_model(f"mock/{as_json}")
    assert [model.complete(request()).text for _ in range(2)] == ["a", "b ===== c"]


def test_mock_scripts_that_cannot_be_used(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="cannot read the script"):
        create_model(f"mock/{tmp_path}/missing.txt")
    bad = tmp_path / "bad.json"
    bad.write_text('{"not": "a list"}')
    with pytest.raises(ConfigError, match="JSON list of strings"):
        create_model(f"mock/{bad}")
    with pytest.raises(ConfigError, match="provider/name"):
        create_model("gpt-4o")
    with pytest.raises(ConfigError, match="unknown model provider 'nope'; known: anthropic, mock, openai"):
        create_model("nope/x")


def test_mock_cuts_at_stop_sequences_and_counts_tokens() -> None:
    model = MockModel("m", replies=["Thought: go\nAction: execute\n<content>\n!ls\n</content>\nObservation: fake"])
    response = model.complete(request("x" * 400, stop=["</content>", "Observation:"]))
    assert response.text == "Thought: go\nAction: execute\n<content>\n!ls\n"
    assert response.usage.model_calls == 1 and response.usage.prompt_tokens == 103
    assert response.usage.completion_tokens == len(response.text) // 4


def test_mock_with_a_responder_sees_the_request() -> None:
    model = MockModel("echo", responder=lambda r: r.messages[-1]["content"].upper())
    assert model.complete(request("abc")).text == "ABC"
    assert model.requests[0].messages[-1]["content"] == "abc"


# -- prices --------------------------------------------------------------------------------------
def test_price_lookup_and_cost() -> None:
    table = PriceTable.load()
    assert table.cost("openai/gpt-4o", 1_000_000, 100_000) == pytest.approx(2.5 + 1.0)
    assert table.lookup("openai/gpt-4o-2024-08-06") == table.lookup("openai/gpt-4o")
    assert table.lookup("openai/gpt-4o-mini-2024-07-18") == table.lookup("openai/gpt-4o-mini")
    assert table.lookup("openai/gpt-4o-2024-05-13").input == 5.0  # type: ignore[union-attr]
    assert table.lookup("anthropic/claude-sonnet-4-5-20250929") is not None
    assert table.lookup("openai/gpt-4o-turbo-of-the-future") is None  # not guessed
    assert table.cost("openai/unknown", 10**6, 10**6) == 0.0
    assert table.cost("mock/anything/at/all.txt", 10**6, 10**6) == 0.0


def test_price_files_extend_the_table(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(
        json.dumps({"openai/my-model": {"input": 1, "output": 3}, "openai/gpt-4o": {"input": 0, "output": 0}})
    )
    table = PriceTable.load(prices)
    assert table.cost("openai/my-model", 2_000_000, 1_000_000) == 5.0
    assert table.cost("openai/gpt-4o", 10**6, 10**6) == 0.0
    assert table.cost("openai/gpt-4o-mini", 10**6, 0) == 0.15
    if sys.version_info >= (3, 11):
        toml = tmp_path / "prices.toml"
        toml.write_text('["mock/*"]\ninput = 1000\noutput = 2000\n')
        assert PriceTable.load(toml).cost("mock/x", 1000, 1000) == 3.0
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"openai/x": {"input": -1, "output": 2}}))
    with pytest.raises(ConfigError, match=r"bad.json: price of 'openai/x': input: .*greater than or equal to 0"):
        PriceTable.load(bad)
    bad.write_text("{oops")
    with pytest.raises(ConfigError, match=r"bad.json is not valid JSON"):
        PriceTable.load(bad)


def test_cost_is_accounted_per_call(tmp_path: Path) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"mock/*": {"input": 1000, "output": 2000}}))
    model = MockModel("m", ModelOptions(prices=prices, cache=None), replies=["x" * 40])
    usage = model.complete(request("y" * 400)).usage
    assert (usage.prompt_tokens, usage.completion_tokens) == (103, 10)
    assert usage.cost == pytest.approx((103 * 1000 + 10 * 2000) / 1e6)


# -- the OpenAI provider, through the official SDK, against a real HTTP server --------------------
def test_openai_provider_sends_the_request_and_reads_the_reply(monkeypatch: pytest.MonkeyPatch) -> None:
    with model_server(reply("Hello there", usage=(1200, 30))) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        model = create_model("openai/gpt-4o-mini", options())
        response = model.complete(request(temperature=0.2, top_p=0.5, max_tokens=99, stop=["</content>"], seed=7))
    assert response.text == "Hello there" and response.finish_reason == "stop"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (1200, 30)
    assert response.usage.cost == pytest.approx((1200 * 0.15 + 30 * 0.6) / 1e6)
    sent = server.requests[0]
    assert sent["model"] == "gpt-4o-mini" and sent["messages"] == [{"role": "user", "content": "hi"}]
    assert (sent["temperature"], sent["top_p"], sent["max_tokens"], sent["seed"]) == (0.2, 0.5, 99, 7)
    assert sent["stop"] == ["</content>"]
    assert server.paths == ["/v1/chat/completions"]


def test_a_reply_cut_at_a_stop_sequence_the_server_did_not_get_says_it_stopped_there() -> None:
    # The API takes four stop sequences; the fifth is honoured here, and the reply then ended at a stop
    # sequence, whatever the server said about the text it sent.
    stops = ["<1>", "<2>", "<3>", "<4>", "</content>"]
    long_reply = "Thought: go\nAction: execute\n<content>\n!ls\n</content>\nObservation: made up, on and on"
    with model_server(reply(long_reply, finish_reason="length"), reply("on and on", finish_reason="length")) as server:
        model = create_model("openai/m", options(base_url=server.base_url))
        cut = model.complete(request(stop=stops))
        uncut = model.complete(request("again", stop=stops))
    assert server.requests[0]["stop"] == stops[:4]
    assert cut.text == "Thought: go\nAction: execute\n<content>\n!ls\n" and cut.finish_reason == "stop"
    assert uncut.text == "on and on" and uncut.finish_reason == "length"


def test_openai_provider_retries_rate_limits_and_server_errors() -> None:
    with model_server(
        error(429, "slow down", retry_after_ms="10"), error(500), error(503, retry_after="0.01"), "ok"
    ) as server:
        model = create_model("openai/m", options(base_url=server.base_url, max_retries=3))
        assert model.complete(request()).text == "ok"
    assert len(server.requests) == 4
    with model_server(*[error(500, "boom", retry_after_ms="1")] * 3) as server:
        model = create_model("openai/m", options(base_url=server.base_url, max_retries=2))
        with pytest.raises(ModelError, match=r"kept failing for openai/m \(HTTP 500: boom\), 2 retries included"):
            model.complete(request())
    with model_server(*[error(429, "quota", retry_after_ms="1")] * 2) as server:
        model = create_model("openai/m", options(base_url=server.base_url, max_retries=1))
        with pytest.raises(ModelError, match=r"still rate-limits openai/m after 1 retries \(429: quota\)"):
            model.complete(request())


def test_openai_provider_asks_again_after_a_malformed_reply() -> None:
    with model_server(raw(b"<html>proxy error</html>"), raw(b'{"choices": []}'), "fine") as server:
        model = create_model("openai/m", options(base_url=server.base_url))
        assert model.complete(request()).text == "fine"
    with model_server(*[raw(b"not json")] * 3) as server:
        model = create_model("openai/m", options(base_url=server.base_url))
        with pytest.raises(ModelError, match=r"sent a malformed reply for openai/m .*body is not JSON"):
            model.complete(request())
    assert len(server.requests) == 3


def test_openai_provider_errors_say_what_to_fix(monkeypatch: pytest.MonkeyPatch) -> None:
    with model_server(error(401, "Incorrect API key provided")) as server:
        model = create_model("openai/m", options(base_url=server.base_url))
        with pytest.raises(ConfigError, match=r"rejected the API key .* set OPENAI_API_KEY to a valid key"):
            model.complete(request())
    with model_server(error(404, "The model `gpt-9` does not exist")) as server:
        model = create_model("openai/gpt-9", options(base_url=server.base_url))
        with pytest.raises(ConfigError, match=r"does not know the model openai/gpt-9 .*gpt-9` does not exist"):
            model.complete(request())
    with model_server(error(400, "context too long")) as server:
        model = create_model("openai/m", options(base_url=server.base_url))
        with pytest.raises(ModelError, match=r"refused the request for openai/m \(HTTP 400: context too long\)"):
            model.complete(request())
    with pytest.raises(ConfigError, match="needs an API key: set OPENAI_API_KEY"):
        create_model("openai/gpt-4o", options())
    with socket.socket() as free:
        free.bind(("127.0.0.1", 0))
        port = free.getsockname()[1]
    model = create_model("openai/m", options(base_url=f"http://127.0.0.1:{port}/v1", max_retries=1))
    with pytest.raises(ModelError, match=f"cannot reach the model server http://127.0.0.1:{port}/v1"):
        model.complete(request())


def test_no_test_can_reach_a_real_provider(monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard in conftest.py: provider keys are unset, and connections leave loopback only."""
    import os

    assert not any(k.startswith(("OPENAI_", "ANTHROPIC_API")) or k.endswith("_API_KEY") for k in os.environ)
    with pytest.raises(ConnectionRefusedError, match="only loopback"), socket.socket() as sock:
        sock.connect(("192.0.2.1", 443))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-would-be-real")
    model = create_model("openai/gpt-4o", options(base_url="http://192.0.2.1/v1", max_retries=0))
    started = time.monotonic()
    with pytest.raises(ModelError, match="cannot reach"):
        model.complete(request())
    assert time.monotonic() - started < 5


# -- the Anthropic provider -----------------------------------------------------------------------
def test_anthropic_provider_against_a_local_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("anthropic")
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"anthropic/claude-test": {"input": 3, "output": 15}}))
    monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
    text = "Thought: list\nAction: execute\n<content>\n!ls\n</content>\nObservation: made up"
    with model_server(
        error(529, "overloaded", retry_after_ms="1"), reply(text, usage=(2000, 40)), error(401, "invalid x-api-key")
    ) as server:
        model = create_model("anthropic/claude-test", options(base_url=server.url, prices=prices))
        messages = [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Query: x"},
            {"role": "user", "content": "more"},
        ]
        response = model.complete(ModelRequest(messages=messages, stop=["</content>"], temperature=0.2))  # type: ignore[arg-type]
        with pytest.raises(ConfigError, match=r"rejected the API key .*invalid x-api-key.* ANTHROPIC_API_KEY"):
            model.complete(request())
    assert response.text == "Thought: list\nAction: execute\n<content>\n!ls\n" and response.finish_reason == "stop"
    assert response.usage.cost == pytest.approx((2000 * 3 + 40 * 15) / 1e6)
    sent = server.requests[1]
    assert server.paths[1] == "/v1/messages" and sent["system"] == "Be brief."
    assert sent["messages"] == [{"role": "user", "content": "Query: x\n\nmore"}]
    assert sent["stop_sequences"] == ["</content>"] and "temperature" not in sent


def test_anthropic_without_a_key_or_without_the_extra(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    pytest.importorskip("anthropic")
    monkeypatch.setenv("HOME", str(tmp_path))  # no credential profile either
    # Refused when the model is made, before any request (and any run directory or sandbox).
    with pytest.raises(ConfigError, match="needs an API key: set ANTHROPIC_API_KEY"):
        create_model("anthropic/claude-test", options(base_url="http://127.0.0.1:9/"))
    monkeypatch.setitem(sys.modules, "anthropic", None)
    monkeypatch.delitem(sys.modules, "super_bench.models.anthropic_chat", raising=False)
    with pytest.raises(ConfigError, match=r"pip install 'super-bench\[anthropic\]'"):
        create_model("anthropic/claude-test")


@pytest.mark.parametrize("model", ["anthropic/claude-sonnet-4-5", "openai/gpt-4o"])
def test_a_provider_without_credentials_is_refused_before_anything_is_written(tmp_path: Path, model: str) -> None:
    pytest.importorskip("anthropic")
    (tmp_path / "home").mkdir()
    (tmp_path / "tmp").mkdir()
    # No key (the session's guard unset them all), no credential profile, sandboxes under tmp/.
    env = {**os.environ, "HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp"), "COLUMNS": "200"}
    args = ["run", "--agent", "react-super", "--model", model, "--task-ids", "tinyreg"]
    result = subprocess.run(
        [sys.executable, "-m", "super_bench", *args], capture_output=True, text=True, cwd=tmp_path, env=env, timeout=120
    )
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    variable = "ANTHROPIC_API_KEY" if model.startswith("anthropic") else "OPENAI_API_KEY"
    (line,) = [line for line in result.stderr.splitlines() if line.startswith("error:")]
    assert f"{model} needs an API key: set {variable}" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "tmp"]  # no run directory
    assert list((tmp_path / "tmp").iterdir()) == []  # no sandbox


# -- the response cache ----------------------------------------------------------------------------
def test_the_cache_answers_reruns_and_a_new_seed_asks_again(tmp_path: Path) -> None:
    with model_server("one", "two", "three") as server:
        model = create_model("openai/m", options(tmp_path, base_url=server.base_url))
        first = model.complete(request(seed=1))
        again = create_model("openai/m", options(tmp_path, base_url=server.base_url)).complete(request(seed=1))
        other_seed = model.complete(request(seed=2))
        other_prompt = model.complete(request("hello", seed=1))
    assert (first.text, first.cached) == ("one", False)
    assert (again.text, again.cached) == ("one", True)
    assert again.usage.cached_calls == 1 and again.usage.prompt_tokens == first.usage.prompt_tokens
    assert (other_seed.text, other_prompt.text) == ("two", "three")
    assert len(server.requests) == 3


def test_the_cache_maps_volatile_text_back(tmp_path: Path) -> None:
    """A task's random directory is a placeholder in the key and in the stored reply."""
    with model_server("%cd /tmp/run-a/content/repo") as server:
        model = create_model("openai/m", options(tmp_path, base_url=server.base_url))
        model.complete(request("you are in /tmp/run-a/content"), volatile={"/tmp/run-a": "<dir>"})
        rerun = model.complete(request("you are in /tmp/run-b/content"), volatile={"/tmp/run-b": "<dir>"})
    assert rerun.cached and rerun.text == "%cd /tmp/run-b/content/repo"
    assert len(server.requests) == 1


def test_a_broken_cache_file_only_costs_the_cache(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    broken = tmp_path / "cache.sqlite"
    broken.write_text("this is not a database")
    with model_server("a", "b") as server:
        model = create_model("openai/m", ModelOptions(cache=broken, base_url=server.base_url))
        assert [model.complete(request()).text for _ in range(2)] == ["a", "b"]
    assert "cannot be used" in caplog.text
