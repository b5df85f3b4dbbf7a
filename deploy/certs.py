"""python -m deploy.certs [DIR] [--name broker --name gateway]: a local CA and certificates (openssl).

For a secured local run (docs/operations.md): `DIR/ca.pem` (the CA clients and the gateway trust),
and for each name `DIR/<name>.pem` (its certificate, signed by the CA, for 127.0.0.1 and
localhost plus `--host`s) and `DIR/<name>-key.pem` (its key, PKCS#8, unencrypted, mode 0600), and
`DIR/<name>-keystore.pem` (key then certificate: a Kafka broker's `ssl.keystore.type=PEM`
keystore). An existing CA is reused, so certificates made later are trusted by the same CA file.
For local use only: the keys are not encrypted.
"""

from __future__ import annotations

import argparse
import os
import secrets
import subprocess
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DAYS = 825


def _openssl(*args: str) -> None:
    subprocess.run(["openssl", *args], check=True, capture_output=True)


def _private(path: Path) -> None:
    os.chmod(path, 0o600)


def make_ca(directory: Path) -> tuple[Path, Path]:
    ca, ca_key = directory / "ca.pem", directory / "ca-key.pem"
    if not (ca.exists() and ca_key.exists()):
        _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(ca_key))
        _private(ca_key)
        _openssl(
            "req", "-x509", "-new", "-key", str(ca_key), "-sha256", "-days", str(DAYS),
            "-subj", "/CN=coordinator local CA", "-out", str(ca),
            "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign",
        )  # fmt: skip
    return ca, ca_key


def make_certificate(directory: Path, name: str, hosts: list[str]) -> Path:
    """`name`.pem, `name`-key.pem and `name`-keystore.pem, signed by the directory's CA."""
    ca, ca_key = make_ca(directory)
    cert, key, keystore = directory / f"{name}.pem", directory / f"{name}-key.pem", directory / f"{name}-keystore.pem"
    _openssl("genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", str(key))
    _private(key)
    names = [
        "DNS:localhost",
        "IP:127.0.0.1",
        *(f"IP:{h}" if h.replace(".", "").isdigit() else f"DNS:{h}" for h in hosts),
    ]
    with tempfile.TemporaryDirectory() as tmp:
        csr, ext = Path(tmp) / "req.csr", Path(tmp) / "ext.cnf"
        ext.write_text(
            f"subjectAltName={','.join(dict.fromkeys(names))}\n"
            "basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n"
            "extendedKeyUsage=serverAuth,clientAuth\n"
        )
        _openssl("req", "-new", "-key", str(key), "-subj", f"/CN={name}", "-out", str(csr))
        _openssl(
            "x509", "-req", "-in", str(csr), "-CA", str(ca), "-CAkey", str(ca_key), "-CAcreateserial",
            "-days", str(DAYS), "-sha256", "-extfile", str(ext), "-out", str(cert),
        )  # fmt: skip
    keystore.write_text(key.read_text() + cert.read_text())
    _private(keystore)
    return cert


def make_principal_key(directory: Path) -> Path:
    """A new key (32 random bytes, hex, mode 0600) for [gateway] principal_key_file; kept if present."""
    path = directory / "gateway-principal.key"
    if not path.exists():
        tmp = path.with_suffix(".tmp")
        tmp.write_text(secrets.token_hex(32))
        _private(tmp)
        os.replace(tmp, path)
    return path


def make_all(directory: Path, names: list[str], hosts: list[str] | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    make_ca(directory)
    for name in names:
        make_certificate(directory, name, hosts or [])
    return directory


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m deploy.certs", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("directory", nargs="?", default=str(ROOT / ".run" / "certs"))
    parser.add_argument("--name", action="append", help="a certificate to make (default: broker and gateway)")
    parser.add_argument("--host", action="append", default=[], help="another host name or address in the certificates")
    parser.add_argument(
        "--principal-key",
        action="store_true",
        help="also DIR/gateway-principal.key: the key the gateway signs its requests' principal with "
        "([gateway] principal_key_file, for the gateway and the service)",
    )
    args = parser.parse_args(argv)
    directory = make_all(Path(args.directory), args.name or ["broker", "gateway"], args.host)
    if args.principal_key:
        print(f"principal key: {make_principal_key(directory)}")
    print(
        f"CA: {directory / 'ca.pem'}; certificates: {', '.join(str(directory / f'{n}.pem') for n in args.name or ['broker', 'gateway'])}"
    )


if __name__ == "__main__":
    main()
