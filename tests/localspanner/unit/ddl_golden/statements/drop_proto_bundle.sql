drop proto bundle
