create or replace view SingerNames sql security invoker as
  SELECT s.SingerId, s.FirstName FROM Singers AS s WHERE s.FirstName IS NOT NULL;
