create proto bundle (examples.music.SingerInfo, `examples.music.Genre`,)
