"""A Modbus server for the tests of inputs.modbus (internal/testserver/modbus.go), run by
Debian's python3 with Debian's python3-pymodbus (3.0): Modbus/TCP on the first port,
RTU framing over TCP on the second, the same devices behind both, and on the third port a
"dead device" that accepts connections and never answers.

Usage: server.py TCP_PORT RTU_PORT DEAD_PORT. It prints "ready" once all three listen.
The register values are REGISTERS below; the Go side keeps the same table.
"""
import asyncio
import sys

from pymodbus.datastore import (ModbusSequentialDataBlock, ModbusServerContext,
                                ModbusSlaveContext)
from pymodbus.server import StartAsyncTcpServer
from pymodbus.transaction import ModbusRtuFramer, ModbusSocketFramer

# Unit 1 (addresses from zero).
HOLDING = [
    2301,            # 0: INT16 230.1 with scale 0.1
    0xFFFE, 0x1DC0,  # 1-2: INT32 ABCD -123456
    0x4060, 0x0000,  # 3-4: FLOAT32 ABCD 3.5
    0x6D6F, 0x7273, 0x652D, 0x3100,  # 5-8: STRING "morse-1"
    0x0102, 0x0304, 0x0506, 0x0708,  # 9-12: UINT64 ABCD 0x0102030405060708
    0x8001,          # 13: bits 0 and 15; INT8H -128, UINT8L 1
    0x5678, 0x1234,  # 14-15: UINT32 CDAB 0x12345678
    0x3E00,          # 16: FLOAT16 1.5
]
INPUT = [100, 0xFFFB, 0x0001, 0x1170]  # INT16 100, INT16 -5, UINT32 70000
COILS = [1, 0, 1, 1, 0]
DISCRETE = [0, 1, 1, 0]


def device(holding, inputs, coils, discrete):
    return ModbusSlaveContext(
        hr=ModbusSequentialDataBlock(0, holding),
        ir=ModbusSequentialDataBlock(0, inputs),
        co=ModbusSequentialDataBlock(0, coils),
        di=ModbusSequentialDataBlock(0, discrete),
        zero_mode=True,
    )


async def main(tcp_port, rtu_port, dead_port):
    context = ModbusServerContext(slaves={
        1: device(HOLDING, INPUT, COILS, DISCRETE),
        2: device([42], [7], [1], [1]),
    }, single=False)
    servers = []
    for port, framer in ((tcp_port, ModbusSocketFramer), (rtu_port, ModbusRtuFramer)):
        servers.append(await StartAsyncTcpServer(context=context, address=("127.0.0.1", port),
                                                 framer=framer, defer_start=True))
    held = []

    async def hold(reader, writer):
        held.append(writer)  # never answers, never closes
        await reader.read(-1)

    dead = await asyncio.start_server(hold, "127.0.0.1", dead_port)
    tasks = [asyncio.create_task(s.serve_forever()) for s in servers]
    while not all(s.server is not None for s in servers):
        await asyncio.sleep(0.01)
    print("ready", flush=True)
    async with dead:
        await asyncio.gather(dead.serve_forever(), *tasks)


if __name__ == "__main__":
    asyncio.run(main(*(int(a) for a in sys.argv[1:4])))
