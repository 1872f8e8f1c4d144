drop table if exists `Order`;
