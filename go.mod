module github.com/t2t-lab/t2t

go 1.26
