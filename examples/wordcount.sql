-- Word count: the classic streaming demo, on a built-in text file.
-- Run it with `make run` or `bin/streamsql run examples/wordcount.sql`.
-- The print sink shows Flink's changelog: +I for a new word, then -U/+U
-- each time its count changes.

SET 'parallelism.default' = '1';
SET 'execution.batch-size' = '1';

CREATE TABLE lines (
  line STRING
) WITH (
  'connector' = 'filesystem',
  'path' = 'examples/data/lines.txt',
  'format' = 'csv',
  'csv.field-delimiter' = '|'
);

CREATE TABLE word_counts (
  word STRING,
  cnt BIGINT
) WITH (
  'connector' = 'print'
);

INSERT INTO word_counts
SELECT LOWER(word) AS word, COUNT(*) AS cnt
FROM lines, LATERAL TABLE(SPLIT(line, ' ')) AS T(word)
GROUP BY LOWER(word);
