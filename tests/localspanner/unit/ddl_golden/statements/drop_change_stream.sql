drop change stream `S`
