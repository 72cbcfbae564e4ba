from vitjax.cli import main

main()
