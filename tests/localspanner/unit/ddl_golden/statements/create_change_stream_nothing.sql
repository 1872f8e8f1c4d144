create change stream Nothing
