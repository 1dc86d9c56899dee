-- Joins over the Nexmark stream (generated events, no servers): every
-- auction of category 10 with its seller (a regular join of two views over
-- one source, read once), and each auction's highest bid within its
-- lifetime (a join feeding a TopN: an updating result, printed as Flink's
-- changelog). Run it with `bin/streamsql run examples/nexmark_join.sql`.

SET 'parallelism.default' = '2';

CREATE TABLE nexmark (
  event_type INT,
  person ROW<id BIGINT, name VARCHAR, emailAddress VARCHAR, creditCard VARCHAR, city VARCHAR,
             state VARCHAR, `dateTime` TIMESTAMP(3), extra VARCHAR>,
  auction ROW<id BIGINT, itemName VARCHAR, description VARCHAR, initialBid BIGINT, reserve BIGINT,
              `dateTime` TIMESTAMP(3), expires TIMESTAMP(3), seller BIGINT, category BIGINT, extra VARCHAR>,
  bid ROW<auction BIGINT, bidder BIGINT, price BIGINT, channel VARCHAR, url VARCHAR,
          `dateTime` TIMESTAMP(3), extra VARCHAR>
) WITH (
  'connector' = 'nexmark',
  'first-event.rate' = '1000',
  'events.num' = '20000'
);

CREATE VIEW person AS SELECT person.id, person.name, person.city FROM nexmark WHERE event_type = 0;
CREATE VIEW auction AS SELECT auction.id, auction.seller, auction.category, auction.`dateTime`, auction.expires
  FROM nexmark WHERE event_type = 1;
CREATE VIEW bid AS SELECT bid.auction, bid.price, bid.`dateTime` FROM nexmark WHERE event_type = 2;

CREATE TABLE sellers (auction BIGINT, name VARCHAR, city VARCHAR) WITH ('connector' = 'print', 'print-identifier' = 'seller');
CREATE TABLE winners (auction BIGINT, price BIGINT) WITH ('connector' = 'print', 'print-identifier' = 'winner');

EXECUTE STATEMENT SET BEGIN
INSERT INTO sellers
SELECT A.id, P.name, P.city FROM auction AS A JOIN person AS P ON A.seller = P.id WHERE A.category = 10;
INSERT INTO winners
SELECT id, price FROM (
  SELECT A.id, B.price, ROW_NUMBER() OVER (PARTITION BY A.id ORDER BY B.price DESC) AS rn
  FROM auction A, bid B
  WHERE A.id = B.auction AND B.`dateTime` BETWEEN A.`dateTime` AND A.expires)
WHERE rn <= 1;
END;
