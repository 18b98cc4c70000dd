#!/usr/bin/env bash
# Makes the table configs/postgres.yaml reads: 10,000 rows of four numbers, a colour (a
# category), an 8-number embedding and a label (0-2) that depends on them, 80 % split 'train'.
#   docs/examples/postgres_sample.sh [DSN]      (default: PG* variables, e.g. postgresql://localhost/postgres)
# then: gputrain train configs/postgres.yaml --set data.dsn=DSN
set -euo pipefail
psql ${1:+"$1"} -v ON_ERROR_STOP=1 -q <<'SQL'
SET client_min_messages = warning;
DROP TABLE IF EXISTS gputrain_samples;
CREATE TABLE gputrain_samples AS
SELECT g AS id, f1, f2, f3, f4, colour, emb,
       (CASE WHEN f1 + f2 * 0.5 + (colour = 'red')::int > 1.2 THEN 2 WHEN f3 - f4 > 0 THEN 1 ELSE 0 END) AS label,
       CASE WHEN g % 5 = 0 THEN 'val' ELSE 'train' END AS split
FROM (SELECT g, random() AS f1, random() AS f2, random() AS f3, random() AS f4,
             (ARRAY['red', 'green', 'blue'])[1 + g % 3] AS colour,
             ARRAY(SELECT random()::real FROM generate_series(1, 8) WHERE g > 0) AS emb
      FROM generate_series(1, 10000) g) AS rows;
SQL
echo "gputrain_samples: $(psql ${1:+"$1"} -Atc 'SELECT count(*) FROM gputrain_samples') rows"
