GRANT select ON change stream Stream TO ROLE analyst
