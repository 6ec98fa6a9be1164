#!/usr/bin/env python3
"""profseed.py DB PID COMM FIRST_MINUTE_MS MINUTES STACK=N...

Writes MINUTES one-minute CPU profiles of process PID (comm COMM) into the
agent's profiles.db DB, from FIRST_MINUTE_MS on, as the collector stores
them: gzip'd pprof, one row a minute.  Each STACK is root-first frames
joined by ';' with its sample count N per minute ("main;train;matmul=3").
Run it while no agent has DB open.

Also a module for the tests and benchmarks that seed profiles of their
own shape (t0646, bench/profile_cold.sh): open_db(PATH) and
insert(db, minute_ms, pid, comm, stacks), stacks [(frames, count)].
"""
import gzip
import sqlite3
import sys


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(num, body):
    return varint(num << 3 | 2) + varint(len(body)) + body


def number(num, v):
    return varint(num << 3) + varint(v)


def pprof(stacks, t_ns):
    strings = ["", "samples", "count"]

    def s(x):
        if x not in strings:
            strings.append(x)
        return strings.index(x)

    funcs, out = {}, bytearray()
    out += field(1, number(1, s("samples")) + number(2, s("count")))
    for frames, value in stacks:
        ids = [funcs.setdefault(f, len(funcs) + 1) for f in frames]
        locs = b"".join(varint(i) for i in reversed(ids))  # leaf first
        out += field(2, field(1, locs) + field(2, varint(value)))
    for i in funcs.values():
        out += field(4, number(1, i) + field(4, number(1, i)))
    for f, i in funcs.items():
        out += field(5, number(1, i) + number(2, s(f)))
    for x in strings:
        out += field(6, x.encode())
    out += number(9, t_ns) + number(10, 60 * 10**9)
    return gzip.compress(bytes(out))


def open_db(path):
    """The agent's profiles.db at path, its table created if new."""
    db = sqlite3.connect(path)
    db.executescript("""
CREATE TABLE IF NOT EXISTS profiles(minute INTEGER NOT NULL, pid INTEGER NOT NULL,
 type INTEGER NOT NULL, labels TEXT NOT NULL, samples INTEGER NOT NULL,
 bytes INTEGER NOT NULL, blob BLOB NOT NULL);
CREATE UNIQUE INDEX IF NOT EXISTS profiles_minute ON profiles(minute, pid, type);
""")
    return db


def insert(db, minute, pid, comm, stacks):
    """One minute's CPU profile of pid, as the collector stores it."""
    blob = pprof(stacks, minute * 10**6)
    db.execute("INSERT INTO profiles VALUES(?,?,?,?,?,?,?)",
               (minute, pid, 0, 'pid="%d",comm="%s"' % (pid, comm),
                sum(n for _, n in stacks), len(blob), blob))


def main(argv):
    if len(argv) < 7:
        sys.exit(__doc__)
    db_path, pid, comm = argv[1], int(argv[2]), argv[3]
    first, minutes = int(argv[4]), int(argv[5])
    stacks = []
    for arg in argv[6:]:
        frames, _, n = arg.rpartition("=")
        stacks.append((frames.split(";"), int(n)))
    db = open_db(db_path)
    for m in range(minutes):
        insert(db, first + m * 60000, pid, comm, stacks)
    db.commit()


if __name__ == "__main__":
    main(sys.argv)
