"""Byte relays that let a process in its own network namespace reach services on this machine's loopback
without any network link between the namespaces: inside the namespace, ``--inside PORT=SOCKET`` listens on
127.0.0.1:PORT and forwards each connection to a Unix socket (namespaces share the filesystem); outside,
``--outside SOCKET=HOST:PORT`` listens on that Unix socket and forwards to the service. Every TCP packet stays
on a loopback interface. Used by ``bench.common.netns``.

    python -m bench.common.socket_relay --inside 5432=/run/x/pg.sock --outside /run/x/pg.sock=127.0.0.1:5432
"""

from __future__ import annotations

import argparse
import asyncio


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while data := await reader.read(1 << 16):
            writer.write(data)
            await writer.drain()
    except (ConnectionError, OSError):
        pass
    finally:
        writer.close()


def handler(connect):
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await connect()
        except OSError:
            writer.close()
            return
        await asyncio.gather(pipe(reader, up_writer), pipe(up_reader, writer))
    return handle


async def main(inside: list[str], outside: list[str]) -> None:
    servers = []
    for spec in inside:
        port, socket_path = spec.split("=", 1)
        servers.append(await asyncio.start_server(
            handler(lambda p=socket_path: asyncio.open_unix_connection(p)), "127.0.0.1", int(port)))
    for spec in outside:
        socket_path, address = spec.split("=", 1)
        host, port = address.rsplit(":", 1)
        servers.append(await asyncio.start_unix_server(
            handler(lambda h=host, p=int(port): asyncio.open_connection(h, p)), socket_path))
    print("ready", flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--inside", nargs="*", default=[])
    parser.add_argument("--outside", nargs="*", default=[])
    args = parser.parse_args()
    asyncio.run(main(args.inside, args.outside))
