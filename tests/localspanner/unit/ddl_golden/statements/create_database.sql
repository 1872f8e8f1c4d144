CREATE DATABASE `my-database`
