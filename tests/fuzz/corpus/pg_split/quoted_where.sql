select f1, "where", E'it''s \' where' AS w FROM t -- WHERE in a comment
