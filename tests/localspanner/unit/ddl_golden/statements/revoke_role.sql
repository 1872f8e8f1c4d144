revoke role reader from role analyst
