print('filled')
