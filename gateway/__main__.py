"""python -m gateway [--config override.toml]: run the Kafka-protocol gateway in the foreground."""

from __future__ import annotations

import argparse
import asyncio
import logging
import resource
import signal

from streaming.config import StreamConfig

from .config import GatewayConfig
from .server import Gateway


async def _run(cfg: GatewayConfig) -> None:
    gateway = Gateway(cfg)
    await gateway.start()
    print(f"GATEWAY-LISTENING bootstrap.servers={gateway.bootstrap}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    ready = asyncio.create_task(gateway.bridge.ready.wait())
    await asyncio.wait([ready, asyncio.create_task(stop.wait())], return_when=asyncio.FIRST_COMPLETED)
    if ready.done():
        print("GATEWAY-READY: the coordinator service answers", flush=True)
    await stop.wait()
    await gateway.close()


def raise_open_files_limit() -> None:
    """Each client connection costs a file descriptor, and its Produce/Fetch broker connection another:
    take the hard limit (a soft limit of 1024 would refuse clients from about 500 on)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard and hard != resource.RLIM_INFINITY:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="coordinator-gateway", description=__doc__)
    parser.add_argument("--config", help="a TOML file overriding conf/defaults.toml")
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("kafka").setLevel(logging.WARNING)
    raise_open_files_limit()
    asyncio.run(_run(GatewayConfig.from_stream_config(StreamConfig.load(args.config))))


if __name__ == "__main__":
    main()
