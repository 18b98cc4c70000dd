"""Random tables in a real PostgreSQL for scripts/config_sweep.py's `postgres` mode: columns of
every type a user's table has (numbers, NaN and Infinity among them, arrays of fixed and varying
length, text, dates, json, images in bytea), NULLs here and there, and the queries people write
over them (a WHERE, SELECT *, an ORDER BY, a LIMIT 0, a CTE, a duplicated or unnamed column);
an enum and a domain among the types.

The server is tests/postgres/pg_server.py's: initdb into a scratch folder, a Unix socket and a
127.0.0.1 port, stopped at the end. Needs numpy (the PNGs of sweep_sources).
"""
import os
import subprocess
import sys

import sweep_sources

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PG_SERVER = os.path.join(ROOT, "tests", "postgres", "pg_server.py")


class Server:
    """The test server, started in `folder`; `dsn` reaches it over its socket."""

    def __init__(self, folder):
        self.folder = os.path.join(folder, "pg")
        subprocess.run([sys.executable, PG_SERVER, "start", self.folder], check=True)
        if os.path.exists(os.path.join(self.folder, "absent")):
            sys.exit("error: " + open(os.path.join(self.folder, "absent")).read())
        self.env = dict(line.strip().split("=", 1) for line in open(os.path.join(self.folder, "server.env")) if "=" in line)
        self.dsn = "host=%s port=%s user=%s dbname=postgres" % (self.env["socket_dir"], self.env["port"], self.env["user"])
        self.tcp_dsn = "postgresql://%s:%s@127.0.0.1:%s/postgres" % (self.env["password_user"], "%s", self.env["port"])

    def sql(self, text):
        psql = os.path.join(self.env["bin_dir"], "psql")
        subprocess.run([psql, self.dsn, "-q", "-v", "ON_ERROR_STOP=1", "-f", "-"], input=text, text=True, check=True,
                       capture_output=True)

    def stop(self):
        subprocess.run([sys.executable, PG_SERVER, "stop", self.folder], check=True)


def quoted(text):
    return "'" + text.replace("'", "''") + "'"


def number(p, scale, specials=("'NaN'", "'Infinity'", "'-Infinity'")):
    if p.maybe(.01): return p.one(*specials)
    return "%.6g" % p.rng.gauss(0, scale)


def array(p, length, element):
    if p.maybe(.02): length += p.one(-1, 1)  # a row of another length
    items = ["NULL" if p.maybe(.005) else element() for _ in range(max(length, 0))]
    return "'{" + ",".join(items).replace("'", "") + "}'"


def image(p):
    blob, _ = sweep_sources.random_image(p)
    return "'\\x" + blob.hex() + "'::bytea"


def random_columns(p):
    """(name, SQL type, value maker) of a table's feature columns."""
    length = p.one(1, 3, 8)
    kinds = {
        "int2": lambda: str(p.rng.randrange(-100, 100)), "int4": lambda: str(p.rng.randrange(-10**6, 10**6)),
        "int8": lambda: str(p.one(p.rng.randrange(-10**6, 10**6), 9 * 10**18)), "real": lambda: number(p, 1),
        "double precision": lambda: number(p, p.one(1, 1e6)), "numeric": lambda: number(p, 1, ("'NaN'", "1e40", "-1e400")),
        "numeric(10,2)": lambda: "%.2f" % p.rng.gauss(0, 100), "bool": lambda: p.one("true", "false"),
        "real[]": lambda: array(p, length, lambda: number(p, 1, ("NaN",))),
        "double precision[]": lambda: array(p, length, lambda: "%.3f" % p.rng.random()),
        "int4[]": lambda: array(p, length, lambda: str(p.rng.randrange(9))),
        "text": lambda: quoted(p.one("red", "green", "blue", "naïve", "")), "varchar(8)": lambda: quoted(p.one("a", "b")),
        "char(2)": lambda: quoted(p.one("x", "yy")), "date": lambda: quoted("2024-01-%02d" % p.rng.randrange(1, 29)),
        "timestamptz": lambda: "now()", "jsonb": lambda: quoted('{"a": 1}'), "uuid": lambda: "gen_random_uuid()",
        "bytea": lambda: image(p), "int4[][]": lambda: "'{{1,2},{3,4}}'", "interval": lambda: "'1 day'",
        "mood": lambda: quoted(p.one("sad", "ok", "happy")), "price": lambda: "%.2f" % p.rng.random(), "point": lambda: "point(1, 2)",
        "numeric[]": lambda: array(p, length, lambda: "%.2f" % p.rng.random()), "bool[]": lambda: array(p, length, lambda: p.one("t", "f")),
    }
    common = ("int4", "real", "double precision", "numeric", "bool", "real[]", "text", "int2", "int8")
    names = [p.one(*common) if p.maybe(.85) else p.one(*kinds) for _ in range(p.one(1, 2, 4))]
    return [("c%d" % j, kind, kinds[kind]) for j, kind in enumerate(names)]


def random_label(p):
    kind = p.one("int4", "int4", "text", "bool", "double precision", "int8")
    classes = p.one(2, 3, 10)
    make = {"int4": lambda: str(p.rng.randrange(classes)), "int8": lambda: str(p.rng.randrange(classes)),
            "text": lambda: quoted(p.one("cat", "dog", "bird")), "bool": lambda: p.one("true", "false"),
            "double precision": lambda: "%.4f" % p.rng.gauss(0, 1)}[kind]
    return kind, lambda: "NULL" if p.maybe(.005) else make()


def write_table(p, server, table):
    """A random table in `server`; the data part of a config that reads it."""
    columns = random_columns(p)
    label_kind, label = random_label(p)
    rows = p.one(0, 1, 2, 5, 40, 300)
    statements = ["DO $$ BEGIN CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy'); CREATE DOMAIN price AS numeric; "
                  "EXCEPTION WHEN duplicate_object THEN NULL; END $$;",
                  "CREATE TABLE %s (id serial, %s, label %s)" % (table, ", ".join("%s %s" % (n, k) for n, k, _ in columns), label_kind)]
    if p.maybe(.3):  # partitioned by a hash of id, which a split reads partition by partition
        partitions = p.one(1, 2, 4)
        statements[-1] += " PARTITION BY HASH (id);" + "".join(
            " CREATE TABLE %s_p%d PARTITION OF %s FOR VALUES WITH (MODULUS %d, REMAINDER %d);" % (table, r, table, partitions, r)
            for r in range(partitions))
    else:
        statements[-1] += ";"
    values = []
    for _ in range(rows):
        cells = ["NULL" if p.maybe(.01) else make() for _, _, make in columns] + [label()]
        values.append("(" + ", ".join(cells) + ")")
    if values:
        statements.append("INSERT INTO %s (%s, label) VALUES %s;" % (table, ", ".join(n for n, _, _ in columns), ",\n".join(values)))
    server.sql("\n".join(statements))
    names = ", ".join(n for n, _, _ in columns)
    query = p.one("SELECT %s, label FROM %s" % (names, table), "SELECT %s, label FROM %s WHERE id %% 5 <> 0" % (names, table),
                  "SELECT * FROM %s" % table, "TABLE %s" % table, "select %s, label from %s order by random();" % (names, table),
                  "WITH r AS (SELECT * FROM %s) SELECT %s, label FROM r" % (table, names),
                  "SELECT %s, label FROM %s LIMIT 0" % (names, table), "SELECT %s, %s, label FROM %s" % (names, columns[0][0], table),
                  "SELECT %s + 1, label FROM %s" % (columns[0][0], table), "SELECT %s, label FROM %s -- the training rows" % (names, table),
                  "SELECT r.%s, r.label FROM public.%s AS r WHERE r.id > 3" % (columns[0][0], table),
                  "SELEC %s FROM %s" % (names, table))
    data = {"source": "postgres", "dsn": server.dsn, "query": query, "labels": "label",
            "task": "regression" if label_kind == "double precision" and p.maybe(.8) else "classification"}
    if p.maybe(.3): data["val_query"] = "SELECT %s, label FROM %s WHERE id %% 5 = 0" % (names, table)
    elif p.maybe(.3): data["val_fraction"] = p.one(0.2, 0.5)
    if p.maybe(.3): data["missing"] = p.one("error", "drop", "mean", "zero")
    if p.maybe(.3): data["streams"] = p.one(1, 2, 4, "auto")
    if p.maybe(.2): data["exclude"] = [columns[-1][0]]
    if p.maybe(.2): data["standardize"] = True
    if p.maybe(.1): data["image_size"] = p.one(4, 16)
    if p.maybe(.05): data["dsn"] = server.tcp_dsn % p.one("wrong-password", server.env["password"])
    return data
