"""Settings: declared once, resolved by precedence, refused with a helpful message."""

from __future__ import annotations

from pathlib import Path

import pytest

from skillsight.config import Settings
from skillsight.errors import ConfigError


def test_defaults_bind_loopback_without_api_keys() -> None:
    settings = Settings.load(env={})
    assert (settings.port, settings.otlp_http_port, settings.otlp_grpc_port) == (8000, 4318, 4317)
    assert settings.api_keys == {}
    assert settings.bind_host == "127.0.0.1"


def test_api_keys_map_projects_and_stay_on_loopback_without_tls() -> None:
    settings = Settings.load(env={"SKILLSIGHT_API_KEYS": "k1:alpha, k2:beta"})
    assert settings.api_keys == {"k1": "alpha", "k2": "beta"}
    # keys in plain text stay on loopback; tests/test_tenancy.py opens it with TLS
    assert settings.bind_host == "127.0.0.1"


def test_precedence_argument_over_env_over_file_over_default(tmp_path: Path) -> None:
    config = tmp_path / "skillsight.toml"
    config.write_text("[skillsight]\nport = 9001\notlp_http_port = 9002\nflush_interval_s = 2\n")
    env = {"SKILLSIGHT_CONFIG": str(config), "SKILLSIGHT_OTLP_HTTP_PORT": "9102"}
    settings = Settings.load({"port": None, "otlp_grpc_port": 9203}, env=env)
    assert settings.port == 9001  # file
    assert settings.otlp_http_port == 9102  # env beats file
    assert settings.otlp_grpc_port == 9203  # argument beats all
    assert settings.flush_interval_s == 2.0


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"SKILLSIGHT_PORT": "eighty"}, "SKILLSIGHT_PORT='eighty'"),
        ({"SKILLSIGHT_PORT": "70000"}, "not a TCP port"),
        ({"SKILLSIGHT_API_KEYS": "nocolon"}, "key:project"),
        ({"SKILLSIGHT_QUEUE_MAX_ROWS": "0"}, "SKILLSIGHT_QUEUE_MAX_ROWS"),
        ({"SKILLSIGHT_CLICKHOUSE_URL": "mysql://x"}, "clickhouse://"),
        ({"SKILLSIGHT_CONFIG": "/nonexistent/skillsight.toml"}, "SKILLSIGHT_CONFIG"),
    ],
)
def test_bad_values_fail_at_start_with_a_fix(env: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        Settings.load(env=env)


def test_every_setting_is_described() -> None:
    described = Settings.describe()
    assert all(env.startswith("SKILLSIGHT_") and help_text for env, _, help_text in described)
    assert len({env for env, _, _ in described}) == len(described)


def test_docs_list_every_setting() -> None:
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[1] / "docs" / "configuration.md").read_text()
    missing = [env for env, _, _ in Settings.describe() if f"`{env}`" not in docs]
    assert not missing, f"docs/configuration.md lacks {missing}"
