CREATE TABLE `Order` (`Select` INT64 NOT NULL, `My Col` STRING(MAX), `back\`tick` BYTES(16), plain BOOL) PRIMARY KEY (`Select`)
