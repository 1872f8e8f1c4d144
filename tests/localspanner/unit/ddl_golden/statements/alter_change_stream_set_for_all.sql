alter change stream S set for all
