revoke execute on table function READ_Stream from role analyst
