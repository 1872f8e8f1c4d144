create database testdb
