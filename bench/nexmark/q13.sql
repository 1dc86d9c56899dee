-- q13: bids enriched from a bounded side input (a processing-time lookup join against a filesystem table).
-- The side input file is ${SIDE_INPUT_PATH} (the benchmark reads FLINK_HOME/data/side_input.txt), CSV key,value;
-- it is the new filesystem connector's table, and the bid view's `dateTime` stands for the benchmark's customTime.
-- The SQL is the Flink Nexmark benchmark's (github.com/nexmark/nexmark, Apache License 2.0); see README.md.
CREATE TABLE side_input (
  `key` BIGINT,
  `value` VARCHAR
) WITH (
  'connector' = 'filesystem',
  'path' = '${SIDE_INPUT_PATH}',
  'format' = 'csv'
);

CREATE TABLE nexmark_q13 (
  auction  BIGINT,
  bidder  BIGINT,
  price  BIGINT,
  customTime  TIMESTAMP(3),
  `value`  VARCHAR
) WITH (
  'connector' = 'blackhole'
);

INSERT INTO nexmark_q13
SELECT
    B.auction,
    B.bidder,
    B.price,
    B.`dateTime`,
    S.`value`
FROM (SELECT *, PROCTIME() as p_time FROM bid) B
JOIN side_input FOR SYSTEM_TIME AS OF B.p_time AS S
ON mod(B.auction, 10000) = S.`key`;
