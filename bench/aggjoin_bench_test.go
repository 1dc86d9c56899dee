package bench

import (
	"fmt"
	"testing"
)

// BenchmarkGroupByString is BenchmarkGroupBy with a STRING key: 10,000
// keys 'key-0' .. 'key-9999' (made by a CAST and CONCAT in the job, as a
// string key usually arrives), COUNT and SUM, updating output.
func BenchmarkGroupByString(b *testing.B) {
	const q = `CREATE TABLE src (k BIGINT, v BIGINT) WITH (
  'connector' = 'datagen', 'rows-per-second' = '0', 'number-of-rows' = '%d', 'seed' = '11',
  'fields.k.min' = '0', 'fields.k.max' = '9999', 'fields.v.min' = '0', 'fields.v.max' = '1000'
);
CREATE TABLE out (k STRING, c BIGINT, s BIGINT) WITH ('connector' = 'blackhole');
CREATE VIEW keyed AS SELECT CONCAT('key-', CAST(k AS STRING)) AS k, v FROM src;
INSERT INTO out SELECT k, COUNT(*), SUM(v) FROM keyed GROUP BY k;`
	for _, par := range []int{1, 2} {
		b.Run(fmt.Sprintf("p%d", par), func(b *testing.B) {
			bench(b, par, rows(10_000_000), q)
		})
	}
}

// BenchmarkMaxRetract is MAX over a retracting input: the inner GROUP BY
// (10,000 keys) emits -U/+U for every key it changes, and the outer MAX per
// 100 groups must retract the old sums, keeping every value it may fall
// back to.
func BenchmarkMaxRetract(b *testing.B) {
	const q = `CREATE TABLE src (k BIGINT, v BIGINT) WITH (
  'connector' = 'datagen', 'rows-per-second' = '0', 'number-of-rows' = '%d', 'seed' = '11',
  'fields.k.min' = '0', 'fields.k.max' = '9999', 'fields.v.min' = '0', 'fields.v.max' = '1000'
);
CREATE TABLE out (g BIGINT, m BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out SELECT MOD(k, 100), MAX(s) FROM (SELECT k, SUM(v) AS s FROM src GROUP BY k) GROUP BY MOD(k, 100);`
	for _, par := range []int{1, 2} {
		b.Run(fmt.Sprintf("p%d", par), func(b *testing.B) {
			bench(b, par, rows(10_000_000), q)
		})
	}
}

// BenchmarkJoin is a regular inner equi-join in memory: 100,000 customers
// (each id once) and BENCH_ROWS orders over random customer ids, so the
// join holds every row and each order probes one customer; events are
// orders plus customers.
func BenchmarkJoin(b *testing.B) {
	const q = `CREATE TABLE customers (id BIGINT, name STRING) WITH (
  'connector' = 'datagen', 'rows-per-second' = '0', 'number-of-rows' = '100000', 'seed' = '3',
  'fields.id.kind' = 'sequence', 'fields.id.start' = '0', 'fields.id.end' = '99999', 'fields.name.length' = '12'
);
CREATE TABLE orders (cid BIGINT, amount BIGINT) WITH (
  'connector' = 'datagen', 'rows-per-second' = '0', 'number-of-rows' = '%d', 'seed' = '5',
  'fields.cid.min' = '0', 'fields.cid.max' = '99999', 'fields.amount.min' = '1', 'fields.amount.max' = '10000'
);
CREATE TABLE out (name STRING, amount BIGINT) WITH ('connector' = 'blackhole');
INSERT INTO out SELECT c.name, o.amount FROM orders o JOIN customers c ON o.cid = c.id;`
	for _, par := range []int{1, 2} {
		b.Run(fmt.Sprintf("p%d", par), func(b *testing.B) {
			n := rows(2_000_000)
			bench(b, par, n+100_000, fmt.Sprintf(q, n)+"\n-- %d events")
		})
	}
}
