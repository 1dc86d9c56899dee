-- Window TopN over the Nexmark bid stream: the three most active bidders of
-- every 10-second window, from Flink's Nexmark DDL (generated events, no
-- servers). Run it with `bin/streamsql run examples/nexmark_topn.sql`.
-- Each window's rows are printed once, when the watermark passes its end.

SET 'parallelism.default' = '2';

CREATE TABLE nexmark (
  event_type INT,
  bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
          `dateTime` TIMESTAMP(3), extra VARCHAR>,
  `dateTime` AS bid.`dateTime`,
  WATERMARK FOR `dateTime` AS `dateTime` - INTERVAL '4' SECOND
) WITH (
  'connector' = 'nexmark',
  'first-event.rate' = '1000',
  'events.num' = '100000'
);

CREATE VIEW bids AS SELECT bid.bidder AS bidder, bid.price AS price, `dateTime` FROM nexmark WHERE event_type = 2;

CREATE TABLE top_bidders (
  window_start TIMESTAMP(3),
  bidder BIGINT,
  bids BIGINT,
  volume BIGINT,
  rn BIGINT
) WITH (
  'connector' = 'print'
);

INSERT INTO top_bidders
SELECT window_start, bidder, bids, volume, rn FROM (
  SELECT *, ROW_NUMBER() OVER (PARTITION BY window_start, window_end ORDER BY bids DESC, bidder) AS rn
  FROM (
    SELECT window_start, window_end, bidder, COUNT(*) AS bids, SUM(price) AS volume
    FROM TABLE(TUMBLE(TABLE bids, DESCRIPTOR(`dateTime`), INTERVAL '10' SECOND))
    GROUP BY window_start, window_end, bidder))
WHERE rn <= 3;
