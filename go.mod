module pfl

go 1.26
