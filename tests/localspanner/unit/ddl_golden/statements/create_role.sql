create role Analyst
