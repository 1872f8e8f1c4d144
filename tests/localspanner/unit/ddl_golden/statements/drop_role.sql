drop role `Order`
