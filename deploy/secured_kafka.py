"""A local broker secured as a production cluster would be, for the gateway's security.

`python -m deploy.secured_kafka start|stop|status [--dir .run/secured] [--port 9092 --sasl-port 9094]`:
certificates (deploy/certs.py) and a single-node KRaft broker with

- a SASL_SSL listener for clients and the gateway: PLAIN, SCRAM-SHA-256 and SCRAM-SHA-512,
  `StandardAuthorizer`, `super.users` = admin, the gateway's identity and ANONYMOUS;
- a PLAINTEXT listener on `--port` for the coordinator service (its principal is ANONYMOUS, a
  super user: only the service should reach it) and the controller listener (PLAINTEXT).

Users (`USERS`): PLAIN's are in the listener's JAAS line; SCRAM's are created when the storage is
formatted (`kafka-storage format --add-scram`). It writes two configuration files:
`DIR/service.toml` for the service (`run_stream.py --config DIR/service.toml`: this broker, its
topics with one replica, `[security]`: the coordinator APIs authorised with the broker's ACLs, read
over SASL_SSL as admin, and `[gateway] principal_key_file`) and `DIR/gateway.toml`, the same with
the `[gateway]` settings of a SASL_SSL gateway in front of the broker (`python -m gateway --config
DIR/gateway.toml`). docs/operations.md walks through a secured run.
For local use: the passwords are fixed and in the files.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .certs import make_all, make_principal_key
from .kafka_local import LocalKafka

ROOT = Path(__file__).resolve().parent.parent
USERS = {
    "admin": "admin-secret",
    "gateway": "gateway-secret",
    "alice": "alice-secret",
    "bob": "bob-secret",
    "carol": "carol-secret",
}
SCRAM_USERS = ("admin", "gateway", "bob")  # (PLAIN takes every user of USERS)
JAAS = "org.apache.kafka.common.security"
# ANONYMOUS: the controller listener and the service's PLAINTEXT listener
SUPER_USERS = ("User:admin", "User:gateway", "User:ANONYMOUS")


def secured_broker(workdir: Path, port: int, sasl_port: int, controller_port: int, certs: Path) -> LocalKafka:
    """The broker (not started): `broker.bootstrap` is its PLAINTEXT listener."""
    plain_users = " ".join(f'user_{u}="{p}"' for u, p in USERS.items())
    scram = [
        arg
        for user in SCRAM_USERS
        for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")
        for arg in ("--add-scram", f"{mechanism}=[name={user},password={USERS[user]}]")
    ]
    return LocalKafka(
        workdir,
        port,
        controller_port,
        extra_config={
            "listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_SSL://127.0.0.1:{sasl_port},"
            f"CONTROLLER://127.0.0.1:{controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port},SASL_SSL://127.0.0.1:{sasl_port}",
            "listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL",
            "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": f"{JAAS}.plain.PlainLoginModule required {plain_users};",
            "listener.name.sasl_ssl.scram-sha-256.sasl.jaas.config": f"{JAAS}.scram.ScramLoginModule required;",
            "listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config": f"{JAAS}.scram.ScramLoginModule required;",
            "ssl.keystore.type": "PEM",
            "ssl.keystore.location": str(certs / "broker-keystore.pem"),
            "ssl.truststore.type": "PEM",
            "ssl.truststore.location": str(certs / "ca.pem"),
            "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
            "super.users": ";".join(SUPER_USERS),
        },
        format_args=scram,
    )


def gateway_settings(certs: Path, sasl_port: int, principal_key: Path | None = None) -> dict:
    """The `[gateway]` settings of a SASL_SSL gateway in front of `secured_broker`."""
    settings = {
        "security_protocol": "SASL_SSL",
        "ssl_certfile": str(certs / "gateway.pem"),
        "ssl_keyfile": str(certs / "gateway-key.pem"),
        "upstream_bootstrap_servers": f"127.0.0.1:{sasl_port}",
        "upstream_security_protocol": "SASL_SSL",
        "upstream_ssl_cafile": str(certs / "ca.pem"),
        "upstream_sasl_mechanism": "SCRAM-SHA-512",
        "upstream_sasl_username": "gateway",
        "upstream_sasl_password": USERS["gateway"],
    }
    if principal_key is not None:
        settings["principal_key_file"] = str(principal_key)
    return settings


def service_settings(certs: Path, sasl_port: int, principal_key: Path | None = None) -> dict:
    """The service's settings for a run behind `secured_broker`: the coordinator APIs authorised
    with the broker's ACLs (`[security]`, its admin client reading them over SASL_SSL as `admin`
    with SCRAM-SHA-512), and the gateway's principal key (`[gateway] principal_key_file`)."""
    settings: dict = {
        "security": {
            "acls_enabled": True,
            "super_users": list(SUPER_USERS),
            "admin_bootstrap_servers": f"127.0.0.1:{sasl_port}",
            "admin_security_protocol": "SASL_SSL",
            "admin_ssl_cafile": str(certs / "ca.pem"),
            "admin_sasl_mechanism": "SCRAM-SHA-512",
            "admin_sasl_username": "admin",
            "admin_sasl_password": USERS["admin"],
        }
    }
    if principal_key is not None:
        settings["gateway"] = {"principal_key_file": str(principal_key)}
    return settings


def toml_tables(settings: dict) -> str:
    """`{table: {key: value}}` as TOML (strings, booleans, numbers, lists of strings)."""
    import json

    def literal(value) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        return json.dumps(value)  # a JSON string, number or list of strings is a TOML one

    return "".join(
        f"[{table}]\n" + "".join(f"{k} = {literal(v)}\n" for k, v in values.items()) + "\n"
        for table, values in settings.items()
    )


def write_config_files(directory: Path, certs: Path, bootstrap: str, sasl_port: int, key: Path) -> tuple[Path, Path]:
    """Whole configuration files: the service's (`service.toml`), and the gateway's (`gateway.toml`:
    the same, and the `[gateway]` settings of a SASL_SSL gateway), mode 0600 (passwords)."""
    settings = {
        "kafka": {"bootstrap_servers": bootstrap},
        "topics": {"replication_factor": 1, "min_insync_replicas": 1},  # one broker
        "redis": {"enabled": False},  # no read model (deploy/run-local.sh starts a Redis for one)
        **service_settings(certs, sasl_port, key),
    }
    service, gateway = directory / "service.toml", directory / "gateway.toml"
    service.write_text(toml_tables(settings))
    settings["gateway"] = {**settings["gateway"], **gateway_settings(certs, sasl_port, key)}
    gateway.write_text(toml_tables(settings))
    for written in (service, gateway):
        written.chmod(0o600)
    return service, gateway


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("action", choices=["start", "stop", "status"])
    ap.add_argument("--dir", default=str(ROOT / ".run" / "secured"))
    ap.add_argument("--port", type=int, default=9092, help="the PLAINTEXT listener (the service's)")
    ap.add_argument("--sasl-port", type=int, default=9094, help="the SASL_SSL listener (clients', the gateway's)")
    args = ap.parse_args(argv)
    directory = Path(args.dir).resolve()
    certs = directory / "certs"
    if args.action == "start":
        make_all(certs, ["broker", "gateway"])
        key = make_principal_key(certs)
    broker = secured_broker(directory / "kafka", args.port, args.sasl_port, args.port + 1, certs)
    if args.action == "start":
        broker.start()
        service, toml = write_config_files(directory, certs, broker.bootstrap, args.sasl_port, key)
        print(
            f"Kafka broker up: SASL_SSL 127.0.0.1:{args.sasl_port} (users {', '.join(USERS)}; CA {certs / 'ca.pem'}), "
            f"PLAINTEXT {broker.bootstrap} for the service; run_stream.py --config {service}, "
            f"python -m gateway --config {toml}"
        )
    elif args.action == "stop":
        broker.stop()
        print("Kafka broker stopped")
    else:
        pid = broker.pid()
        print(f"running (pid {pid})" if pid else "not running")
        return 0 if pid else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
