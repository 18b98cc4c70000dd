SELECT d.x, d.label FROM public."By Day" AS d /* c */ WHERE d.day <> 4; -- end
