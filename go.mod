module wharf

go 1.26.0
